"""One self-contained HTML page: verdict and tables in plain HTML, the wait-for chain as an inline
SVG laid out in Python (chain_picture.py), charts drawn by inline JS.

No network: no CDN, fonts or external scripts.  The data the charts need is
embedded as JSON in a <script type="application/json"> tag, with <, > and &
written as \\u escapes so nothing in the capture can close the tag.  Sizes are
bounded (threads in the timeline, segments per thread, stacks, frames, GPU
points) so a capture with thousands of threads still makes a page of a few MB.
"""
from typing import Tuple
import html
import json

from . import chain_picture
from .common import PROCESS_HEADER, command_text, failed_text, gpu_rows, looks_like_error, process_rows, tail_heading
from .consensus import class_where, hosts_text, rank_ranges, report_classes, stack_text

MAX_TIMELINE_THREADS = 200      # rows in the timeline
MAX_SEGMENTS = 400              # per timeline row; more are merged into time buckets
MAX_THREAD_TABLE = 500          # rows in the threads table
MAX_STACK_DEPTH = 120           # frames per stack in the flame graph (root and leaf ends kept)
MAX_FLAME_ENTRIES = 20000       # (thread, stack) pairs in the flame graph
MAX_FRAME_TEXT = 300            # characters of a function or file name
MAX_GPU_POINTS = 600            # per device and series

# timeline category: (key, label, color): the bands the report's sample_classes name
CATEGORIES = [
    ("running", "running on CPU", "#2ca02c"),
    ("lock", "lock / futex", "#d62728"),
    ("io", "storage I/O, D-state, read/open", "#ff7f0e"),
    ("network", "network / IPC", "#1f77b4"),
    ("sleep", "sleep / poll", "#9a9a9a"),
    ("child", "waiting for a child", "#9467bd"),
    ("other", "other / unknown", "#dcd6c8"),
]
_CAT_INDEX = {key: i for i, (key, _label, _color) in enumerate(CATEGORIES)}


def _clean(text, limit=None):
    """A str safe to write as UTF-8: lone surrogates replaced, optionally shortened."""
    if text is None:
        return ""
    text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    if limit and len(text) > limit:
        text = text[:limit - 1] + "\u2026"
    return text


def esc(text, limit=None):
    return html.escape(_clean(text, limit), quote=True)


def _json_for_script(data):
    """JSON that can sit inside <script type="application/json"> whatever the strings hold."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _num(x, digits=3):
    return None if x is None else round(float(x), digits)


# --- data for the charts -----------------------------------------------------

def _timeline(report):
    window = report.window
    duration = float(window.duration_s or 0)
    rate = window.rate_hz or 0
    period = 1.0 / rate if rate else 0.1
    verdict = report.verdict
    roles = {p.pid: p.role for p in report.processes}
    kinds = {(p.pid, t.tid): t.kind for p in report.processes for t in p.threads}
    chain_pids = {step.pid for step in report.chain}

    candidates = []
    for order, (proc, thread) in enumerate((p, t) for p in report.processes for t in p.threads):
        if not thread.timeline:
            continue
        culprit = proc.pid == verdict.pid and thread.tid == verdict.tid
        priority = (0 if culprit else 1, 0 if proc.pid in chain_pids else 1,
                    0 if thread.tid == proc.pid else 1, order)
        candidates.append((priority, order, proc, thread, culprit))
    total = len(candidates)
    kept = sorted(sorted(candidates, key=lambda c: c[0])[:MAX_TIMELINE_THREADS], key=lambda c: c[1])

    labels, label_index = [], {}

    def intern(text):
        if text not in label_index:
            label_index[text] = len(labels)
            labels.append(text)
        return label_index[text]

    rows = []
    for _priority, _order, proc, thread, culprit in kept:
        samples = sorted(thread.timeline, key=lambda s: s.t or 0)
        segs = []
        for i, s in enumerate(samples):
            t, state, syscall = float(s.t or 0), s.state, s.syscall
            band, kind, waits_on = s.cls
            cat = _CAT_INDEX.get(band, _CAT_INDEX["other"])
            if state == "R" or syscall == "running":
                text = "running (%s)" % state
            else:
                text = "%s%s [%s, %s]" % (syscall or "syscall unreadable", ": " + waits_on if waits_on else "",
                                          "state " + str(state), kind)
                if s.wchan:
                    text += " wchan " + str(s.wchan)
            nxt = float(samples[i + 1].t or 0) if i + 1 < len(samples) else None
            end = nxt if nxt is not None and nxt - t <= 2.5 * period else t + period
            if duration:
                end = min(end, max(duration, t))
            lab = intern(_clean(text, 240))
            if segs and segs[-1][2] == cat and segs[-1][3] == lab and abs(segs[-1][1] - t) < 1e-6:
                segs[-1][1] = end
            else:
                segs.append([t, end, cat, lab])
        if len(segs) > MAX_SEGMENTS:
            segs = _bucket(segs, max(duration, segs[-1][1]), MAX_SEGMENTS)
        rows.append({
            "pid": proc.pid, "tid": thread.tid, "name": _clean(thread.name or "?", 80),
            "role": _clean(roles.get(proc.pid) or "", 40), "kind": _clean(kinds.get((proc.pid, thread.tid)) or "", 40),
            "culprit": culprit, "segs": [[int(round(a * 1000)), int(round(b * 1000)), c, lab] for a, b, c, lab in segs],
        })
    return {"rows": rows, "labels": labels, "total": total, "shown": len(rows), "duration": duration,
            "categories": [[k, label, color] for k, label, color in CATEGORIES]}


def _bucket(segs, duration, n):
    """Merge segments into n time buckets, each coloured by its most common category."""
    width = duration / n
    out = []
    first = 0   # segments are in time order: skip those ending before the bucket
    for b in range(n):
        lo, hi = b * width, (b + 1) * width
        share = {}
        while first < len(segs) and segs[first][1] <= lo:
            first += 1
        for a, e, cat, lab in segs[first:]:
            if a >= hi:
                break
            overlap = min(e, hi) - max(a, lo)
            if overlap > 0:
                share[(cat, lab)] = share.get((cat, lab), 0) + overlap
        if not share:
            continue
        cat, lab = max(share.items(), key=lambda kv: kv[1])[0]
        if out and out[-1][2] == cat and out[-1][3] == lab and abs(out[-1][1] - lo) < 1e-9:
            out[-1][1] = hi
        else:
            out.append([lo, hi, cat, lab])
    return out


def _flame(report):
    frames, stacks = report.frames, report.stacks
    roles = {p.pid: p.role for p in report.processes}
    frame_out, frame_index = [], {}
    stack_out, stack_index = [], {}

    def frame_id(i):
        if i not in frame_index:
            function, file, line = frames[i] if isinstance(i, int) and 0 <= i < len(frames) else ("?", None, None)
            frame_index[i] = len(frame_out)
            frame_out.append([_clean(function, MAX_FRAME_TEXT), _clean(file, MAX_FRAME_TEXT),
                              line if isinstance(line, int) else None])
        return frame_index[i]

    def stack_id(sid):
        if sid not in stack_index:
            ids = stacks[sid] if isinstance(sid, int) and 0 <= sid < len(stacks) else None
            if not isinstance(ids, list):
                return None
            root_first = [frame_id(i) for i in reversed(ids)]
            if len(root_first) > MAX_STACK_DEPTH:
                keep_root = MAX_STACK_DEPTH // 5
                keep_leaf = MAX_STACK_DEPTH - keep_root - 1
                elided = len(root_first) - keep_root - keep_leaf
                marker = ("elided", elided)
                if marker not in frame_index:
                    frame_index[marker] = len(frame_out)
                    frame_out.append(["\u2026 %d frames elided" % elided, "", None])
                root_first = root_first[:keep_root] + [frame_index[marker]] + root_first[-keep_leaf:]
            stack_index[sid] = len(stack_out)
            stack_out.append(root_first)
        return stack_index[sid]

    entries = []
    for proc in report.processes:
        for thread in proc.threads:
            counts = {}
            for sid, n in thread.stack_runs:
                counts[sid] = counts.get(sid, 0) + n
            for sid, n in counts.items():
                entries.append((n, proc, thread, sid))
    dropped = 0
    if len(entries) > MAX_FLAME_ENTRIES:
        entries.sort(key=lambda e: -e[0])
        dropped = sum(e[0] for e in entries[MAX_FLAME_ENTRIES:])
        entries = entries[:MAX_FLAME_ENTRIES]
    procs, by_pid, threads_by_key = [], {}, {}
    for n, proc, thread, sid in entries:
        s = stack_id(sid)
        if s is None:
            continue
        pid = proc.pid
        if pid not in by_pid:
            by_pid[pid] = {"pid": pid, "role": _clean(roles.get(pid) or "", 40),
                           "cmd": _clean(command_text(proc, 80)), "threads": [], "samples": 0}
            procs.append(by_pid[pid])
        key = (pid, thread.tid)
        if key not in threads_by_key:
            threads_by_key[key] = {"tid": thread.tid, "name": _clean(thread.name or "?", 80), "stacks": []}
            by_pid[pid]["threads"].append(threads_by_key[key])
        threads_by_key[key]["stacks"].append([s, n])
        by_pid[pid]["samples"] += n
    order = {p.pid: i for i, p in enumerate(report.processes)}
    procs.sort(key=lambda p: order.get(p["pid"], 0))
    return {"frames": frame_out, "stacks": stack_out, "procs": procs, "dropped_samples": dropped,
            "rate_hz": report.window.stack_rate_hz}


def _downsample(points, n):
    if len(points) <= n:
        return points
    step = len(points) / n
    return [points[int(i * step)] for i in range(n)]


def _gpu(report):
    gpu = report.gpu
    if not gpu.available:
        return {"available": False, "reason": _clean(gpu.reason or "no GPU data in the capture", 300)}
    devices = []
    for series in gpu.series:
        devices.append({
            "index": series.index, "name": _clean(series.name or "GPU", 80),
            "util": _downsample([[_num(t), _num(v, 1)] for t, v in series.util], MAX_GPU_POINTS),
            "memutil": _downsample([[_num(t), _num(v, 1)] for t, v in series.memutil], MAX_GPU_POINTS),
            "sm": _downsample([[_num(t), _num(v, 2)] for t, v in series.sm], MAX_GPU_POINTS),
            "tensor": _downsample([[_num(t), _num(v, 2)] for t, v in series.tensor], MAX_GPU_POINTS),
        })
    return {"available": True, "devices": devices}


def chart_data(report):
    v = report.verdict
    return {
        "verdict": {"pid": v.pid, "tid": v.tid},
        "timeline": _timeline(report),
        "flame": _flame(report),
        "gpu": _gpu(report),
    }


# --- the page -----------------------------------------------------------------

def _table(header, rows, cls=""):
    out = ['<table class="%s"><thead><tr>' % cls]
    out += ["<th>%s</th>" % esc(h) for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % esc(c) for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _list(items):
    if not items:
        return "<p class=muted>none</p>"
    return "<ul>" + "".join("<li>%s</li>" % esc(x) for x in items) + "</ul>"


def render(report):
    v = report.verdict
    window = report.window
    tool = report.tool
    data = chart_data(report)
    culprit = "pid %s, tid %s%s" % (v.pid, v.tid, " '%s'" % v.thread_name if v.thread_name else "")
    title = "stalldiag: %s" % (v.category or "?")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title>" % esc(title),
        "<style>%s</style>" % CSS,
        "</head><body>",
        "<header><h1>%s</h1>" % esc(title),
        '<p class="meta">%swindow %.1f s, %s samples at %s Hz%s</p></header>' % (
            esc(report.hostname or "") + " &middot; " if report.hostname else "",
            float(window.duration_s or 0), esc(window.samples), esc(window.rate_hz),
            " &middot; interrupted (%s)" % esc(window.interrupted) if window.interrupted else ""),
        '<section id="verdict" class="verdict conf-%s">' % esc(v.confidence or "none"),
        "<h2>Verdict</h2><dl>",
        "<dt>category</dt><dd><code>%s</code></dd>" % esc(v.category),
        '<dt>summary</dt><dd class="summary">%s</dd>' % esc(v.summary),
        "<dt>culprit</dt><dd>%s</dd>" % esc(culprit),
        "<dt>confidence</dt><dd>%s%s%s</dd>" % (
            esc(v.confidence),
            ", resting on " + esc(v.confidence_rests_on) if v.confidence_rests_on else "",
            "<br>not ruled out: %s<br>would settle it: %s" % (
                esc("; ".join(v.alternatives)), esc("; ".join(v.to_settle or [])))
            if v.alternatives else ""),
        '<dt>chain</dt><dd class="chain">%s</dd>' % esc(report.chain_text or "-"),
        "</dl></section>",
        chain_picture.section(report),
        '<section id="evidence"><h2>Evidence</h2>%s</section>' % _list(v.evidence or []),
        '<section id="findings"><h2>Findings</h2>%s</section>' % (
            "<ul>" + "".join("<li><b>%s</b>: %s</li>" % (esc(f.kind), esc(f.summary))
                             for f in report.findings) + "</ul>"
            if report.findings else "<p class=muted>none</p>"),
        _ranks_html(report),
        '<section id="limitations"><h2>Not observed / limitations</h2>%s</section>' % _list(report.limitations),
        '<section id="processes"><h2>Processes</h2>%s%s</section>' % (
            _table(PROCESS_HEADER, process_rows(report), "procs"), _threads_table(report)),
        _failed_calls_html(report),
        _output_tail_html(report),
        '<noscript><p class="note">The timeline, flame graph and GPU charts below are drawn by JavaScript; '
        "enable it to see them. Everything above is plain HTML.</p></noscript>",
        '<section id="timeline-section"><h2>Timeline</h2>',
        '<p class="help">One row per thread (grouped by process), coloured by what the /proc samples '
        "saw it doing. Hover a segment for the syscall and time.</p>",
        '<div id="legend" class="legend">%s</div>' % "".join(
            '<span><i style="background:%s"></i>%s</span>' % (color, esc(label)) for _k, label, color in CATEGORIES),
        '<p id="timeline-note" class="note">%s</p>' % (
            "showing %d of %d threads (the culprit, the threads on the chain and main threads first)"
            % (data["timeline"]["shown"], data["timeline"]["total"])
            if data["timeline"]["shown"] < data["timeline"]["total"] else ""),
        '<div id="timeline" class="chart"></div></section>',
        '<section id="flame-section"><h2>Flame graph (sampled Python stacks)</h2>',
        '<p class="help">Root at top; widths proportional to py-spy samples%s. Hover for function, file:line and '
        "samples; click to zoom, click the top bar to zoom out.</p>" % (
            " at %s Hz" % esc(data["flame"]["rate_hz"]) if data["flame"]["rate_hz"] else ""),
        '<label>process <select id="flame-select"></select></label> '
        '<label><input type="checkbox" id="flame-threads" checked> split by thread</label> '
        '<button id="flame-reset" type="button">reset zoom</button>',
        '<div id="flame" class="chart"></div></section>',
        '<section id="gpu-section"><h2>GPU</h2>',
        _gpu_html(report),
        '<div id="gpu" class="chart"></div></section>',
        '<footer>%s %s &middot; capture schema %s</footer>' % (
            esc((tool and tool.name) or "stalldiag"), esc((tool and tool.version) or ""), esc(report.schema_version)),
        '<div id="tip" class="tip" hidden></div>',
        '<script type="application/json" id="stalldiag-data">%s</script>' % _json_for_script(data),
        "<script>%s</script>" % JS,
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


# --- ranks: classes by stack, and a grid of the ranks coloured by class -------------------------

# majority classes in quiet colours, outlier classes in loud ones; classes past the palettes grey
CLASS_COLORS = ["#4e79a7", "#59a14f", "#76b7b2", "#b6992d", "#b07aa1", "#9c755f", "#86bcb6", "#8cd17d"]
OUTLIER_COLORS = ["#e15759", "#f28e2b", "#d37295", "#ff9d9a", "#fabfd2", "#ffbe7d"]
OTHER_COLOR, MISSING_COLOR = "#c8c8c8", "#ffffff"
GRID_WIDTH = 768                # px: the grid's cells span this width
MAX_GRID_HOSTS = 64             # hosts x local ranks up to this many hosts; beyond, rank order in rows


def class_colors(classes):
    """{class index: colour}."""
    out, calm, loud = {}, iter(CLASS_COLORS), iter(OUTLIER_COLORS)
    for c in classes:
        out[c.index] = next(loud if c.outlier else calm, OTHER_COLOR)
    return out


class GridCell:
    __slots__ = ("rank", "host", "local", "cls", "outlier", "tip")

    def __init__(self, rank, host, local, cls, outlier, tip):
        self.rank, self.host, self.local, self.cls, self.outlier, self.tip = rank, host, local, cls, outlier, tip


def rank_grid(cells, classes, missing=()):
    """An inline SVG: one cell per rank coloured by its class (outliers outlined), with a legend.
    Hosts x local ranks when every rank has a local rank and there are few hosts; otherwise the
    ranks in order, in rows of 64 (128, 256 for larger jobs), runs of one class drawn as one rect.
    Hover a cell (its <title>) for the rank, host and class. No script."""
    colors = class_colors(classes)
    by_index = {c.index: c for c in classes}
    hosts = sorted({c.host for c in cells}, key=str)
    locals_known = all(isinstance(c.local, int) and c.local >= 0 for c in cells)
    legend = "".join('<span><i style="background:%s"></i>#%d %s: %d rank%s%s</span>' % (
        colors[c.index], c.index, esc(c.shape, 80), c.count, "" if c.count == 1 else "s",
        " <b>outlier</b>" if c.outlier else "") for c in classes[:len(CLASS_COLORS) + len(OUTLIER_COLORS)])
    if len(classes) > len(CLASS_COLORS) + len(OUTLIER_COLORS):
        legend += '<span><i style="background:%s"></i>%d more classes</span>' % (
            OTHER_COLOR, len(classes) - len(CLASS_COLORS) - len(OUTLIER_COLORS))
    if missing:
        legend += '<span><i style="background:%s"></i>in no report: %d rank%s</span>' % (
            MISSING_COLOR, len(missing), "" if len(missing) == 1 else "s")
    parts = []

    def rect(x, y, w, h, cls, tip, outlier=False):
        parts.append('<rect x="%g" y="%g" width="%g" height="%g" fill="%s"%s><title>%s</title></rect>' % (
            x, y, w, h, colors.get(cls, MISSING_COLOR if cls is None else OTHER_COLOR),
            ' stroke="#000" stroke-width="1.5" class="outlier"' if outlier else
            (' stroke="#999" stroke-dasharray="2,2"' if cls is None else ""), esc(tip)))

    def label(y, text):
        parts.append('<text x="0" y="%g" class="axis">%s</text>' % (y, esc(text, 40)))

    if locals_known and len(hosts) <= MAX_GRID_HOSTS:
        width = max(c.local for c in cells) + 1
        size = max(4, min(18, GRID_WIDTH // max(width, 1)))
        left = 130
        grid = {(c.host, c.local): c for c in cells}
        for row, host in enumerate(hosts):
            y = row * (size + 2)
            label(y + size - 1, host)
            for local in range(width):
                cell = grid.get((host, local))
                if cell is None:
                    continue
                rect(left + local * (size + 2), y, size, size, cell.cls, cell.tip, cell.outlier)
        svg_w, svg_h = left + width * (size + 2), len(hosts) * (size + 2)
        how = "one row per host, one cell per local rank"
    else:
        n = max([c.rank for c in cells] + list(missing) + [0]) + 1
        columns = 64 if n <= 4096 else 128 if n <= 16384 else 256
        size = max(1, GRID_WIDTH // columns - 1)
        left, top = 110, 6
        by_rank = {}
        for c in cells:             # one cell a rank number (an outlier shown over its namesake)
            if c.rank not in by_rank or c.outlier:
                by_rank[c.rank] = c
        for row in range((n + columns - 1) // columns):
            y = top + row * (size + 1)
            first = row * columns
            if row % max(1, 12 // (size + 1)) == 0:
                label(y + size, "ranks %d-%d" % (first, min(n, first + columns) - 1))
            col = 0
            while col < columns and first + col < n:
                cell = by_rank.get(first + col)
                cls = cell.cls if cell else None
                if cell is not None and cell.outlier:
                    x = left + col * (size + 1)
                    rect(x, y, size, size, cls, cell.tip, True)
                    if size < 8:    # a small cell: a ring around it, to be found at a glance
                        parts.append('<circle cx="%g" cy="%g" r="%g" fill="none" stroke="#000" stroke-width="1.5" '
                                     'class="outlier-ring"/>' % (x + size / 2, y + size / 2, size + 3))
                    col += 1
                    continue
                end = col + 1      # a run of one class (or of missing ranks), drawn as one rect
                while end < columns and first + end < n:
                    nxt = by_rank.get(first + end)
                    if (nxt.cls if nxt else None) != cls or (nxt is not None and nxt.outlier):
                        break
                    end += 1
                c = by_index.get(cls)
                tip = "ranks %d-%d: %s" % (first + col, first + end - 1,
                                          "#%d %s" % (c.index, c.shape) if c else "in no report")
                rect(left + col * (size + 1), y, (end - col) * (size + 1) - 1, size, cls,
                     cell.tip if cell and end == col + 1 else tip)
                col = end
        svg_w, svg_h = left + columns * (size + 1), top + ((n + columns - 1) // columns) * (size + 1)
        how = "ranks in order, %d a row" % columns
    return ('<div class="legend">%s</div><p class="help">%s; hover a cell for its rank, host and class; '
            'outliers are outlined.</p><svg xmlns="http://www.w3.org/2000/svg" class="rank-grid" width="%d" '
            'height="%d" role="img" aria-label="ranks by class">%s</svg>' % (
                legend, how, svg_w, svg_h + 4, "".join(parts)))


def _class_table(classes):
    return _table(["class", "ranks", "which", "hosts", "where", "stack (innermost first)", "diverges"],
                  [["#%d%s" % (c.index, " outlier" if c.outlier else ""), c.count,
                    rank_ranges(c.ranks, max_runs=12), hosts_text(c.hosts), class_where(c),
                    stack_text(c.stack, frames=8), c.diverges.text() if c.diverges else "-"] for c in classes],
                  "classes")


def _ranks_html(report):
    """A host's ranks: the classes by stack, the grid, every rank."""
    if not report.ranks or not report.ranks.rows:
        return ""
    rows = report.ranks.rows
    classes = report_classes(report.ranks)
    cls_of = {r: c for c in classes for r in c.ranks}
    cells = [GridCell(r.rank, r.host, r.local_rank, cls_of[r.rank].index if r.rank in cls_of else None, r.suspect,
                      "rank %d (local %s) pid %s on %s: %s in %s" % (r.rank, r.local_rank, r.pid, r.host, r.state,
                                                                    r.frame or r.where)) for r in rows]
    return ('<section id="ranks"><h2>Ranks</h2><p class="help">%d rank%s in %d class%s by stack: the same state '
            'and innermost frames (function and file).</p>%s%s<details><summary>Every rank (%d)</summary>%s'
            '</details></section>' % (
                len(rows), "" if len(rows) == 1 else "s", len(classes), "" if len(classes) == 1 else "es",
                rank_grid(cells, classes), _class_table(classes), len(rows),
                _table(["rank", "local", "host", "pid", "state", "where", "frame", "GPU", ""],
                       [[r.rank, r.local_rank, r.host, r.pid, r.state, r.where, r.frame or "-",
                         ",".join(map(str, r.gpus or [])) or "-", "suspect" if r.suspect else ""]
                        for r in rows[:MAX_THREAD_TABLE]], "ranks")))


def render_incident(incident, all_ranks=False):
    """`stalldiag merge` as one offline page: the merged verdict, the ranks in a grid coloured by
    class, the classes, the outliers and the hosts. Plain HTML and inline SVG: no script."""
    v = incident.verdict
    title = "stalldiag merge: %s" % (v.category or "?")
    classes = incident.groups
    hosts = incident.hosts
    cells = [GridCell(r.rank, r.host, r.local_rank, r.class_index, r.suspect,
                      "rank %d (local %s) pid %s on %s: %s in %s%s" % (
                          r.rank, r.local_rank, r.pid, r.host, r.state, r.frame or r.where,
                          " (class #%s)" % r.class_index if r.class_index else "")) for r in incident.ranks]
    missing = []
    if v.missing_ranks:
        seen = {r.rank for r in incident.ranks}
        missing = [n for n in range(max(seen) + 1) if n not in seen] if seen else []
    outliers = incident.outliers
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title>" % esc(title),
        "<style>%s</style>" % CSS,
        "</head><body>",
        "<header><h1>%s</h1>" % esc(title),
        '<p class="meta">%d report%s &middot; %s &middot; %d ranks &middot; %d class%s</p></header>' % (
            len(hosts), "" if len(hosts) == 1 else "s", esc(hosts_text([h.host for h in hosts])),
            len(incident.ranks), len(classes), "" if len(classes) == 1 else "es"),
        '<section id="verdict" class="verdict conf-%s"><h2>Verdict</h2><dl>' % ("high" if v.rank is not None else "none"),
        "<dt>category</dt><dd><code>%s</code></dd>" % esc(v.category),
        '<dt>summary</dt><dd class="summary">%s</dd>' % esc(v.summary),
        "<dt>classes</dt><dd>%s</dd>" % esc(v.consensus or "-"),
        "<dt>missing</dt><dd>ranks in no report: %s</dd>" % esc(v.missing_ranks) if v.missing_ranks else "",
        "</dl></section>",
    ]
    if cells:
        parts.append('<section id="rank-grid"><h2>Ranks by class</h2>%s</section>' % rank_grid(cells, classes, missing))
        parts.append('<section id="classes"><h2>Classes of ranks by stack</h2><p class="help">Ranks whose main '
                     "threads are in the same state with the same innermost frames (function and file; lines may "
                     "differ), largest first; each says where its stack leaves the larger class it shares most "
                     "frames with (STAT's prefix tree).</p>%s</section>" % _class_table(classes))
    if outliers:
        parts.append('<section id="outliers"><h2>Outliers (%d)</h2>%s</section>' % (len(outliers), _table(
            ["rank", "host", "pid", "local", "state", "where", "frame", "class"],
            [[r.rank, r.host, r.pid, r.local_rank, r.state, r.where, r.frame or "-", "#%s" % r.class_index]
             for r in outliers[:MAX_THREAD_TABLE]], "outliers")))
    by_category = {}
    for h in hosts:
        by_category.setdefault(h.category, []).append(h)
    groups = sorted(by_category.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))
    parts.append('<section id="hosts"><h2>Hosts</h2>%s<details%s><summary>Every host (%d)</summary>%s</details>'
                 "</section>" % (
                     _table(["category", "hosts", "which", "e.g. (the first host's verdict)"],
                            [[cat, len(members), hosts_text([h.host for h in members]), members[0].summary]
                             for cat, members in groups], "host-groups"),
                     " open" if len(hosts) <= 8 else "", len(hosts),
                     _table(["host", "file", "category", "ranks", "processes", "progress", "summary"],
                            [[h.host, h.file, h.category, rank_ranges(h.ranks), h.processes, h.progress, h.summary]
                             for h in hosts[:MAX_THREAD_TABLE]], "hosts")))
    if all_ranks:
        parts.append('<section id="all-ranks"><h2>Every rank</h2>%s</section>' % _table(
            ["rank", "host", "pid", "local", "state", "where", "frame", "class", ""],
            [[r.rank, r.host, r.pid, r.local_rank, r.state, r.where, r.frame or "-", "#%s" % r.class_index,
              "suspect" if r.suspect else ""] for r in incident.ranks], "ranks"))
    parts += ["<footer>stalldiag merge of %d file%s</footer>" % (
        len(incident.merged_from), "" if len(incident.merged_from) == 1 else "s"), "</body></html>"]
    return "\n".join(parts) + "\n"


def _threads_table(report):
    rows = []
    for proc in report.processes:
        for t in proc.threads:
            residency = ", ".join("%s %d%%" % (k, round(100 * s)) for k, s in list((t.residency or {}).items())[:4])
            rows.append([proc.pid, t.tid, _clean(t.name, 80), t.kind or "-",
                         t.samples if t.samples is not None else "-", residency or "-",
                         "%.2f" % t.cpu_seconds if t.cpu_seconds is not None else "-"])
    note = ""
    if len(rows) > MAX_THREAD_TABLE:
        note = '<p class="note">first %d of %d threads</p>' % (MAX_THREAD_TABLE, len(rows))
        rows = rows[:MAX_THREAD_TABLE]
    return ('<details><summary>Threads (%d)</summary>%s%s</details>'
            % (sum(len(p.threads) for p in report.processes), note,
               _table(["pid", "tid", "thread", "kind", "samples", "residency", "CPU s"], rows, "threads")))


def _failed_calls_html(report):
    """--syscalls exact: the calls that failed, per process (only when some did)."""
    if not report.failed_calls:
        return ""
    return ('<section id="failed-calls"><h2>Failed syscalls (exact counts)</h2>%s</section>'
            % _list(["pid %d: %s" % (failed.pid, failed_text(failed.calls)) for failed in report.failed_calls]))


def _output_tail_html(report):
    """The last lines each process wrote to its regular-file stdout/stderr and logs."""
    tails = report.output_tails
    if not tails:
        return ""
    out = ['<section id="output-tail"><h2>Last lines written</h2>',
           '<p class="help">The newest lines of the regular files each process writes to (redacted); '
           'lines that look like an error or a retry are marked.</p>']
    for tail in tails:
        out.append('<p class="tail-file">%s</p><pre class="tail">' % esc(tail_heading(tail)))
        out += ['<span class="err">%s</span>' % esc(line) if looks_like_error(line) else esc(line)
                for line in tail.lines]
        out.append("</pre>")
    out.append("</section>")
    # one line a row: the <pre> keeps the breaks between them
    return "\n".join(out)


def _gpu_html(report):
    gpu = report.gpu
    if not gpu.available:
        return '<p class="gpu-na">GPU: not available (%s)</p>' % esc(gpu.reason or "no GPU data")
    out = [_table(["index", "name", "util mean", "SM (GPM)", "tensor (GPM)", "memory used / total", "MIG",
                   "ECC uncorrected"], gpu_rows(report), "gpus")]
    if gpu.gpm_note:
        out.append('<p class="note">%s</p>' % esc(gpu.gpm_note))
    return "".join(out)


CSS = r"""
pre.tail{background:#f6f6f4;border:1px solid var(--line);padding:6px 8px;overflow-x:auto;font-size:12px;margin:2px 0 10px}
pre.tail .err{color:#b00020;font-weight:600}p.tail-file{margin:8px 0 0;font-family:"DejaVu Sans Mono",Menlo,monospace;font-size:12px}
:root{--fg:#1d1d1f;--muted:#6b6b6b;--bg:#fff;--line:#e2e2e2}
html{overflow-y:scroll}
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;color:var(--fg);
 background:var(--bg);margin:0 auto;padding:12px 24px 40px;max-width:1400px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:3px}
.meta,.muted,.help,footer{color:var(--muted)}.help{margin:2px 0 6px;font-size:13px}
.note{color:#8a5a00;font-size:13px}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
.verdict{border-left:6px solid #999;background:#fafafa;padding:4px 14px 8px}
.verdict.conf-high{border-color:#d62728}.verdict.conf-medium{border-color:#ff7f0e}.verdict.conf-low{border-color:#9a9a9a}
.verdict h2{border:0;margin-top:8px}
dl{display:grid;grid-template-columns:110px 1fr;gap:4px 12px;margin:0}dt{color:var(--muted)}dd{margin:0}
dd.summary{font-weight:600}dd.chain{font-family:"DejaVu Sans Mono",Menlo,monospace;font-size:13px;white-space:pre-wrap}
ul{margin:4px 0;padding-left:22px}li{margin:2px 0;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;
 vertical-align:top;overflow-wrap:anywhere}th{background:#f3f3f3}
details{margin:8px 0}summary{cursor:pointer;color:#1f4e9a}
.legend span{display:inline-block;margin:2px 12px 2px 0;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;border:1px solid #0002}
.chart{overflow-x:auto;margin:6px 0}.chart svg{display:block}
.chart text{font:11px "DejaVu Sans",Arial,sans-serif;fill:#222}
.chart .grp{font-weight:bold}.chart .culprit{fill:#b00000;font-weight:bold}.chart .axis{fill:#666}
.chart rect.seg:hover,.chart rect.fl:hover{stroke:#000;stroke-width:1}
.tip{position:fixed;z-index:10;pointer-events:none;background:#222;color:#fff;padding:5px 8px;border-radius:4px;
 font-size:12px;max-width:560px;white-space:pre-wrap;overflow-wrap:anywhere;box-shadow:0 2px 6px #0004}
select,button{font:inherit;font-size:13px}select{max-width:70%}
.gpu-chart{margin-bottom:10px}
svg.rank-grid{display:block;margin:6px 0}svg.rank-grid text{font:11px "DejaVu Sans",Arial,sans-serif;fill:#666}
svg.rank-grid rect:hover{stroke:#000;stroke-width:1}
table.classes td:nth-child(-n+3),table.classes th,table.outliers td:nth-child(-n+4){white-space:nowrap}
.gpu-na{font-weight:600}
.chain-figure{overflow-x:auto;margin:6px 0}svg.chain-picture{display:block}
svg.chain-picture g.node:hover rect,svg.chain-picture g.arrow:hover path{filter:brightness(0.9)}
footer{margin-top:28px;font-size:12px}
"""

JS = r"""
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var D = JSON.parse(document.getElementById("stalldiag-data").textContent);
  var tip = document.getElementById("tip");

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, cls, anchor) {
    var t = el("text", {x: x, y: y}, parent);
    if (cls) t.setAttribute("class", cls);
    if (anchor) t.setAttribute("text-anchor", anchor);
    t.textContent = s;
    return t;
  }
  function fit(s, px) {
    var n = Math.floor(px / 6.3);
    if (n <= 1) return "";
    return s.length > n ? s.slice(0, n - 1) + "\u2026" : s;
  }
  function basename(p) { p = p || "?"; var i = p.lastIndexOf("/"); return i >= 0 ? p.slice(i + 1) : p; }
  function fmt(t) { return (Math.round(t * 1000) / 1000).toFixed(t < 10 ? 2 : 1); }

  function showTip(ev) {
    var s = ev.target && ev.target.__tip;
    if (!s) { tip.hidden = true; return; }
    tip.textContent = s;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 10);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 10);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function hideTip() { tip.hidden = true; }
  function hover(svg) { svg.addEventListener("mousemove", showTip); svg.addEventListener("mouseleave", hideTip); }
  function width(node) { return Math.max(600, (node.clientWidth || 1000) - 4); }

  // ---- timeline ----
  function drawTimeline() {
    var T = D.timeline, host = document.getElementById("timeline");
    host.textContent = "";
    if (!T.rows.length) { host.textContent = "No /proc samples in this capture."; return; }
    var W = width(host), LW = 280, RH = 14, GH = 18, top = 22;
    var dur = T.duration || 0;
    // segments are [start ms, end ms, category, label]
    T.rows.forEach(function (r) { r.segs.forEach(function (s) { if (s[1] / 1000 > dur) dur = s[1] / 1000; }); });
    if (!dur) dur = 1;
    var plotW = W - LW - 10, xs = function (t) { return LW + (t / dur) * plotW; };
    var nGroups = 0, last = null;
    T.rows.forEach(function (r) { if (r.pid !== last) { nGroups++; last = r.pid; } });
    var H = top + nGroups * GH + T.rows.length * RH + 8;
    var svg = el("svg", {width: W, height: H, id: "timeline-svg", role: "img"}, host);
    // time axis
    var step = niceStep(dur / 10);
    for (var t = 0; t <= dur + 1e-9; t += step) {
      el("line", {x1: xs(t), x2: xs(t), y1: top - 4, y2: H, stroke: "#eee"}, svg);
      text(svg, xs(t), top - 8, fmt(t) + " s", "axis", "middle");
    }
    var y = top; last = null;
    T.rows.forEach(function (r) {
      if (r.pid !== last) {
        last = r.pid;
        text(svg, 2, y + 13, "pid " + r.pid + (r.role ? "  (" + r.role + ")" : ""), "grp");
        el("line", {x1: 0, x2: W, y1: y + GH - 1, y2: y + GH - 1, stroke: "#ccc"}, svg);
        y += GH;
      }
      var label = "  " + r.tid + " " + r.name + (r.kind ? " \u00b7 " + r.kind : "");
      var lt = text(svg, 6, y + RH - 3, fit(label, LW - 10), r.culprit ? "culprit" : null);
      lt.__tip = "pid " + r.pid + " tid " + r.tid + " '" + r.name + "'" + (r.role ? "\nrole: " + r.role : "") +
        (r.kind ? "\nkind: " + r.kind : "") + (r.culprit ? "\nthe verdict's culprit" : "");
      var g = el("g", {"class": "row", "data-pid": r.pid, "data-tid": r.tid}, svg);
      r.segs.forEach(function (s) {
        var t0 = s[0] / 1000, t1 = s[1] / 1000, x0 = xs(t0), w = Math.max(1, xs(t1) - x0);
        var c = T.categories[s[2]];
        var rect = el("rect", {x: x0.toFixed(1), y: y + 1, width: w.toFixed(1), height: RH - 2, fill: c[2], "class": "seg"}, g);
        rect.__tip = "pid " + r.pid + " tid " + r.tid + " '" + r.name + "'\n" + T.labels[s[3]] +
          "\n" + fmt(t0) + " \u2013 " + fmt(t1) + " s (" + fmt(t1 - t0) + " s)  \u00b7 " + c[1];
      });
      if (r.culprit) el("rect", {x: LW - 2, y: y, width: plotW + 4, height: RH, fill: "none", stroke: "#b00000"}, svg);
      y += RH;
    });
    hover(svg);
  }
  function niceStep(x) {
    var p = Math.pow(10, Math.floor(Math.log(x) / Math.LN10)), m = x / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  // ---- flame graph ----
  var F = D.flame, flameView = "all", zoom = null, byThread = true;
  function node(name, kind, extra) { return {name: name, kind: kind, value: 0, children: [], index: {}, extra: extra}; }
  function child(parent, key, make) {
    var c = parent.index[key];
    if (!c) { c = make(); parent.index[key] = c; parent.children.push(c); }
    return c;
  }
  function buildTree(view) {
    var root = node(view === "all" ? "all processes" : "", "root");
    F.procs.forEach(function (p) {
      if (view !== "all" && String(p.pid) !== view) return;
      var pn = view === "all" ? child(root, "p" + p.pid, function () { return node("pid " + p.pid + (p.role ? " (" + p.role + ")" : ""), "proc", p); }) : root;
      if (view !== "all") { root.name = "pid " + p.pid + (p.role ? " (" + p.role + ")" : "") + "  " + p.cmd; root.kind = "proc"; }
      p.threads.forEach(function (t) {
        var tn = !byThread ? pn : child(pn, "t" + t.tid, function () { return node("tid " + t.tid + " " + t.name, "thread", t); });
        t.stacks.forEach(function (sc) {
          var frames = F.stacks[sc[0]], n = sc[1], cur = tn;
          root.value += n; if (pn !== root) pn.value += n; if (tn !== pn) tn.value += n;
          for (var i = 0; i < frames.length; i++) {
            var fi = frames[i];
            cur = child(cur, fi, function () { return node(F.frames[fi][0], "frame", F.frames[fi]); });
            cur.value += n;
          }
        });
      });
    });
    return root;
  }
  function frameColor(n) {
    if (n.kind === "root") return "#c9c9c9";
    if (n.kind === "proc") return "#b8c4d6";
    if (n.kind === "thread") return "#cfd8e3";
    var file = n.extra[1] || "";
    var h = 0;
    for (var i = 0; i < n.name.length; i++) h = (h * 31 + n.name.charCodeAt(i)) >>> 0;
    var j = h % 20;
    if (/site-packages|dist-packages/.test(file)) return "hsl(" + (40 + j) + ",85%," + (62 + (h % 7)) + "%)";
    if (/\/lib\/python\d|^<frozen|threading\.py|queue\.py/.test(file)) return "hsl(" + (195 + j) + ",45%," + (70 + (h % 7)) + "%)";
    return "hsl(" + (8 + j) + ",80%," + (62 + (h % 7)) + "%)";
  }
  function depthOf(n) { var d = 0; n.children.forEach(function (c) { d = Math.max(d, depthOf(c)); }); return d + 1; }
  function drawFlame() {
    var host = document.getElementById("flame");
    host.textContent = "";
    hideTip();
    if (!F.procs.length) { host.textContent = "No Python stacks were sampled in this capture."; return; }
    var root = buildTree(flameView), top = zoom || root;
    var W = width(host), RH = 17, depth = depthOf(top);
    var svg = el("svg", {width: W, height: depth * RH + 4, id: "flame-svg", "data-view": flameView}, host);
    var total = root.value || 1, minW = 0.4;
    function draw(n, x, w, d) {
      if (w < minW) return;
      var g = el("g", {"class": "fl-node"}, svg);
      var r = el("rect", {x: x.toFixed(2), y: d * RH, width: Math.max(0.5, w - 0.5).toFixed(2), height: RH - 1,
                          fill: frameColor(n), "class": "fl", rx: 1}, g);
      var tipText;
      if (n.kind === "frame") tipText = n.name + "\n" + (n.extra[1] || "?") + (n.extra[2] != null ? ":" + n.extra[2] : "");
      else tipText = n.name;
      tipText += "\n" + n.value + " sample" + (n.value === 1 ? "" : "s") + " (" + (100 * n.value / total).toFixed(1) + "%)";
      r.__tip = tipText;
      var label = n.kind === "frame" ? n.name + " (" + basename(n.extra[1]) + (n.extra[2] != null ? ":" + n.extra[2] : "") + ")" : n.name;
      var s = fit(label, w - 6);
      if (s) { var t = text(g, x + 3, d * RH + 12, s); t.__tip = tipText; t.setAttribute("pointer-events", "none"); }
      g.addEventListener("click", function (ev) { ev.stopPropagation(); zoom = (n === top && zoom) ? null : n; drawFlame(); });
      var cx = x;
      n.children.slice().sort(function (a, b) { return b.value - a.value; }).forEach(function (c) {
        var cw = w * c.value / (n.value || 1);
        draw(c, cx, cw, d + 1); cx += cw;
      });
    }
    draw(top, 0, W, 0);
    hover(svg);
  }
  function setupFlame() {
    var sel = document.getElementById("flame-select");
    var opt = document.createElement("option");
    var all = 0; F.procs.forEach(function (p) { all += p.samples; });
    opt.value = "all"; opt.textContent = "all processes (" + all + " samples)"; sel.appendChild(opt);
    F.procs.forEach(function (p) {
      var o = document.createElement("option");
      o.value = String(p.pid);
      o.textContent = "pid " + p.pid + (p.role ? " " + p.role : "") + " \u2014 " + p.samples + " samples \u2014 " + p.cmd;
      sel.appendChild(o);
    });
    sel.addEventListener("change", function () { flameView = sel.value; zoom = null; drawFlame(); });
    document.getElementById("flame-reset").addEventListener("click", function () { zoom = null; drawFlame(); });
    var cb = document.getElementById("flame-threads");
    cb.checked = true;
    cb.addEventListener("change", function () { byThread = cb.checked; zoom = null; drawFlame(); });
  }

  // ---- GPU ----
  function drawGpu() {
    var G = D.gpu, host = document.getElementById("gpu");
    host.textContent = "";
    if (!G.available || !G.devices.length) return;
    var dur = D.timeline.duration || 0;
    G.devices.forEach(function (d) { ["util", "sm", "tensor", "memutil"].forEach(function (k) {
      d[k].forEach(function (p) { if (p[0] > dur) dur = p[0]; }); }); });
    if (!dur) dur = 1;
    var W = Math.min(width(host), 900), H = 130, L = 40, R = 10, T = 16, B = 20;
    var series = [["util", "NVML utilization %", "#2ca02c"], ["sm", "GPM SM activity %", "#d62728"],
                  ["tensor", "GPM tensor %", "#9467bd"], ["memutil", "memory bandwidth %", "#1f77b4"]];
    var legend = document.createElement("div"); legend.className = "legend"; host.appendChild(legend);
    series.forEach(function (s) {
      if (!G.devices.some(function (d) { return d[s[0]].length; })) return;
      var sp = document.createElement("span"), i = document.createElement("i");
      i.style.background = s[2]; sp.appendChild(i); sp.appendChild(document.createTextNode(s[1])); legend.appendChild(sp);
    });
    G.devices.forEach(function (d) {
      var box = document.createElement("div"); host.appendChild(box);
      var svg = el("svg", {width: W, height: H, "class": "gpu-chart", "data-device": d.index}, box);
      var xs = function (t) { return L + (t / dur) * (W - L - R); }, ys = function (v) { return T + (1 - v / 100) * (H - T - B); };
      text(svg, L, 11, "GPU " + d.index + " \u00b7 " + d.name, "grp");
      [0, 50, 100].forEach(function (v) {
        el("line", {x1: L, x2: W - R, y1: ys(v), y2: ys(v), stroke: "#e6e6e6"}, svg);
        text(svg, L - 4, ys(v) + 4, v + "%", "axis", "end");
      });
      text(svg, L, H - 5, "0 s", "axis"); text(svg, W - R, H - 5, fmt(dur) + " s", "axis", "end");
      series.slice().reverse().forEach(function (s) {
        var pts = d[s[0]];
        if (!pts.length) return;
        var p = pts.map(function (q, i) { return (i ? "L" : "M") + xs(q[0]).toFixed(1) + "," + ys(Math.max(0, Math.min(100, q[1]))).toFixed(1); }).join("");
        if (pts.length === 1) p += "h2";
        var path = el("path", {d: p, fill: "none", stroke: s[2], "stroke-width": s[0] === "util" ? 2 : 1.5, "class": "gpu-" + s[0]}, svg);
        var mean = 0; pts.forEach(function (q) { mean += q[1]; }); mean /= pts.length;
        path.__tip = "GPU " + d.index + " " + s[1] + ": mean " + mean.toFixed(1) + " over " + pts.length + " samples";
      });
      hover(svg);
    });
  }

  function safe(f, id) {
    try { f(); } catch (e) {
      var host = document.getElementById(id);
      if (host) host.textContent = "could not draw this chart: " + e;
      if (window.console) console.warn(e);
    }
  }
  safe(drawTimeline, "timeline");
  safe(setupFlame, "flame");
  safe(drawFlame, "flame");
  safe(drawGpu, "gpu");
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { safe(drawTimeline, "timeline"); safe(drawFlame, "flame"); }, 150);
  });
})();
"""


class HtmlRenderer:
    format = "html"
    extensions: Tuple[str, ...] = (".html", ".htm")

    # render() below is this module's function, looked up when called
    def render(self, report, color=False):
        return render(report)

    def render_incident(self, incident, color=False, all_ranks=False):
        return render_incident(incident, all_ranks=all_ranks)
