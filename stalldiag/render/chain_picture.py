"""The wait-for chain as a picture: an inline SVG laid out here, in Python, from the Report alone.

Processes are boxes, threads are nodes inside them, each wait is an arrow labelled with what it
waits on (a lock, a child, a pipe, a collective, a futex word ...), and the verdict's culprit is
outlined in red and labelled CULPRIT (colour and text). The chain runs down one column: its
threads in chain order, each process's box around its own; a cycle (a deadlock) is an arrow back
up the lane left of the boxes to the step it closes on, drawn red with every arrow of the loop; a
walk that ended on a terminal edge (a lock held at fork, a lost task) or a resource (storage)
ends at a dashed node saying so. Beside the chain, each box holds the other threads of its
process that matter most (the culprit, the main thread, threads waiting or working before idle
ones), at most MAX_THREADS_PER_BOX in all, the rest counted.

The size is bounded whatever the report holds: at most MAX_STEPS steps are drawn (the middle of a
longer chain is one "... N steps" node), MAX_THREADS_PER_BOX threads a box, so at most
MAX_STEPS + 1 boxes. No script: the page shows it without JavaScript. Every text from the capture
is escaped.

layout(report) -> Picture (None without a chain): the geometry, tested on its own;
svg(picture) -> the markup.
"""
import html
from dataclasses import field
from typing import List, Optional, Tuple

from ..records import typed_record
from .common import command_text

MAX_STEPS = 12                 # chain steps drawn; a longer chain keeps both ends
MAX_THREADS_PER_BOX = 8        # thread nodes in one process box (chain threads always among them)
MAX_LABEL = 52                 # characters of a line of an arrow's label
MAX_NODE_TEXT = 40             # characters of a line in a chain node
MAX_OTHER_TEXT = 28            # characters of a line in another thread's node

# geometry, px
NODE_W, NODE_H = 280, 40       # a thread on the chain
GAP = 46                       # below each chain node: its arrow and the arrow's label
ARROW_DX = 26                  # the arrow's x inside the chain column
OTHER_W, OTHER_H, OTHER_GAP = 190, 34, 8
OTHER_COLS = 3
PAD, HEADER, BOX_GAP, LANE = 12, 26, 18, 14
FOOT = 16                      # the "+ N more threads" line
TOP = 8

# the bands of the timeline (html.CATEGORIES): a node is tinted by its thread's commonest band
BAND_COLORS = {"running": "#2ca02c", "lock": "#d62728", "io": "#ff7f0e", "network": "#1f77b4",
               "sleep": "#9a9a9a", "child": "#9467bd", "other": "#b8b0a0"}
CULPRIT_COLOR, CYCLE_COLOR, ARROW_COLOR = "#b00000", "#d62728", "#444444"

IDLE_KINDS = {"sleep", "poll", "other", "unknown", "condition", "event", "exited"}


def clean(text, limit=None):
    """A str safe to write as UTF-8 (lone surrogates replaced), shortened to limit characters."""
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
    return html.escape(clean(text, limit), quote=True)


# --- the picture's records --------------------------------------------------------------------

@typed_record
class Node:
    key: Tuple                     # (pid, tid) of a thread; ("end",) or ("gap",) otherwise
    role: str                      # "chain", "other", "end" (how the walk ended), "gap" (steps left out)
    lines: List[str]               # the text shown, one a line (not escaped)
    tip: str                       # the hover text
    x: float = 0
    y: float = 0
    w: float = NODE_W
    h: float = NODE_H
    pid: Optional[int] = None
    tid: Optional[int] = None
    step: Optional[int] = None     # its index on the chain (the first, if it is there twice)
    band: str = "other"
    culprit: bool = False
    on_cycle: bool = False

    @property
    def cx(self):
        return self.x + self.w / 2

    @property
    def cy(self):
        return self.y + self.h / 2


@typed_record
class Arrow:
    src: Tuple                     # Node keys
    dst: Tuple
    edge: Optional[str]            # the edge kind
    label: List[str]               # one or two lines (not escaped)
    tip: str
    points: List[Tuple[float, float]] = field(default_factory=list)
    label_at: Tuple[float, float] = (0, 0)
    cycle: bool = False            # the edge that closes a cycle
    on_cycle: bool = False         # an edge of the loop


@typed_record
class Box:
    pid: int
    title: str
    tip: str
    threads: int                   # the process's threads
    hidden: int                    # of them not drawn
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0
    culprit: bool = False


@typed_record
class Picture:
    width: float
    height: float
    boxes: List[Box]
    nodes: List[Node]
    arrows: List[Arrow]
    left_out: int = 0              # chain steps not drawn
    cycle: bool = False
    summary: str = ""              # one line, for the svg's aria-label

    def node(self, key):
        return next((n for n in self.nodes if n.key == key), None)

    @property
    def culprit(self):
        return next((n for n in self.nodes if n.culprit), None)


# --- layout -----------------------------------------------------------------------------------

def _band(thread):
    """The band of a thread's commonest /proc sample (the timeline's colour)."""
    counts = {}
    for sample in thread.timeline if thread is not None else ():
        band = sample.cls.band if sample.cls else "other"
        counts[band] = counts.get(band, 0) + 1
    return max(counts, key=counts.get) if counts else "other"


def _wait_text(step):
    """What a step waits on in a few words: "futex on futex word 0x55..", "wait4 on child pid 12"."""
    activity, what = step.activity, step.waits_on
    if activity is None and what is None and step.text:
        # a report written before steps carried these: the parenthesized part of the step's text
        text = step.text
        inner = text[text.find("(") + 1:text.rfind(")")] if "(" in text and text.endswith(")") else ""
        if step.kind and inner.startswith(step.kind + " "):
            inner = inner[len(step.kind) + 1:]
        return inner or None
    if activity and what and not str(activity).startswith("on CPU"):
        return "%s on %s" % (activity, what)
    return activity or what


def _words(words, edge):
    """What an arrow's waiter waits for, as the diagnosis said it ("waits for lock_b, which it
    holds"); a report without the words names the edge's kind."""
    if words:
        return clean(words)
    return "waits for it (%s)" % clean(edge) if edge else "waits for it"


def _thread_name(tid, name):
    return "tid %s '%s'" % (tid, clean(name) if name is not None else "?")


def _other_priority(proc, thread, culprit):
    kind = thread.kind or "unknown"
    return (0 if culprit else 1, 0 if thread.tid == proc.pid else 1, 1 if kind in IDLE_KINDS else 0,
            -(thread.cpu_seconds or 0))


def layout(report):
    """The picture of report.chain, or None when the report has no chain."""
    chain = list(report.chain or [])
    if not chain:
        return None
    verdict = report.verdict
    culprit_key = (verdict.pid, verdict.tid) if verdict.pid is not None and verdict.tid is not None else None
    procs = {p.pid: p for p in report.processes}
    threads = {(p.pid, t.tid): t for p in report.processes for t in p.threads}

    end = chain[-1].end if isinstance(chain[-1].end, dict) else None
    cycle_to = end.get("cycle_to") if end else None
    if not isinstance(cycle_to, int) or not 0 <= cycle_to < len(chain):
        cycle_to = None

    # the steps drawn: all, or both ends of a long chain around a "gap" node
    left_out = 0
    indexes = list(range(len(chain)))
    if len(chain) > MAX_STEPS:
        head = MAX_STEPS // 2
        tail = MAX_STEPS - head - 1
        left_out = len(chain) - head - tail
        indexes = list(range(head)) + [None] + list(range(len(chain) - tail, len(chain)))

    # the chain column: its nodes in chain order (a thread on it twice is one node), and the
    # processes' boxes in the order they first appear
    nodes, by_key, column = [], {}, []
    step_key = {}                      # chain index -> node key
    box_order, box_column = [], {}     # pid -> [column keys]
    gap_pid = None
    for index in indexes:
        if index is None:
            key = ("gap",)
            node = Node(key, "gap", ["\u2026 %d more step%s" % (left_out, "" if left_out == 1 else "s")],
                        "%d steps of the chain are not drawn (see the chain's text above)" % left_out)
            owner = gap_pid
        else:
            step = chain[index]
            key = (step.pid, step.tid)
            step_key[index] = key
            owner = gap_pid = step.pid
            if key in by_key:
                continue
            thread = threads.get(key)
            is_culprit = key == culprit_key
            name = step.name if step.name is not None else (thread.name if thread else None)
            role = step.role or (procs[step.pid].role if step.pid in procs else None)
            second = "%s%s" % ("CULPRIT \u00b7 " if is_culprit else "", step.kind or "?")
            wait = _wait_text(step)
            node = Node(key, "chain", [clean(_thread_name(step.tid, name), MAX_NODE_TEXT),
                                       clean("%s \u00b7 step %d" % (second, index + 1), MAX_NODE_TEXT)],
                        "%spid %s tid %s '%s'%s\nkind: %s%s\nstep %d of the chain" % (
                            "the verdict's culprit\n" if is_culprit else "", step.pid, step.tid, clean(name),
                            " (%s)" % clean(role) if role else "", clean(step.kind),
                            "\nwaits: " + clean(wait) if wait else "", index + 1),
                        pid=step.pid, tid=step.tid, step=index, band=_band(thread), culprit=is_culprit)
        by_key[key] = node
        nodes.append(node)
        column.append(key)
        if owner not in box_column:
            box_order.append(owner)
            box_column[owner] = []
        box_column[owner].append(key)

    # how the walk ended, when it did not close a cycle: a node below the last step
    last_key = step_key[len(chain) - 1]
    end_words = None
    if end and cycle_to is None and (end.get("edge") or end.get("resource")):
        end_words = clean(end.get("resource") or _words(end.get("waits_for"), end.get("edge"))[len("waits for "):])
        node = Node(("end",), "end", [clean(end_words, MAX_NODE_TEXT),
                                      clean("end of the walk" + (" (%s)" % end["edge"] if end.get("edge") else ""),
                                            MAX_NODE_TEXT)],
                    "how the walk ended: %s" % end_words)
        nodes.append(node)
        by_key[node.key] = node
        position = column.index(last_key) + 1
        column.insert(position, node.key)
        owner = chain[-1].pid
        box_column[owner].insert(box_column[owner].index(last_key) + 1, node.key)

    # the culprit's process, when it is not on the chain
    if culprit_key is not None and culprit_key not in by_key and culprit_key[0] not in box_column \
            and culprit_key[0] in procs:
        box_order.append(culprit_key[0])
        box_column[culprit_key[0]] = []

    # the other threads of each box, those that matter first
    others = {}
    for pid in box_order:
        proc = procs.get(pid)
        drawn = sum(1 for key in box_column[pid] if by_key[key].role == "chain")
        room = max(0, MAX_THREADS_PER_BOX - drawn)
        candidates = []
        if proc is not None:
            for order, thread in enumerate(proc.threads):
                key = (pid, thread.tid)
                if key in by_key:
                    continue
                candidates.append((_other_priority(proc, thread, key == culprit_key), order, thread))
        candidates.sort(key=lambda c: (c[0], c[1]))
        others[pid] = [c[2] for c in candidates[:room]]

    # geometry: boxes stacked down the page, the chain column at the left of each
    arrows = _arrows(report, chain, indexes, step_key, by_key, cycle_to, end_words, left_out)
    lanes = sum(1 for a in arrows if _lane(a, column))
    left = PAD + LANE * max(1, lanes)
    other_cols = min(OTHER_COLS, max([len(v) for v in others.values()] + [0]))
    label_w = ARROW_DX + 9 + MAX_LABEL * 6.3 + 8     # an arrow's label reaches past a chain node
    box_w = PAD + max(NODE_W + (48 + other_cols * (OTHER_W + 10) - 10 if other_cols else 0), label_w) + PAD
    boxes = []
    sources = {a.src for a in arrows}
    y = TOP
    for pid in box_order:
        proc = procs.get(pid)
        col = box_column[pid]
        for j, key in enumerate(col):
            node = by_key[key]
            node.x, node.y = left + PAD, y + HEADER + j * (NODE_H + GAP)
            node.w, node.h = NODE_W, NODE_H
        chain_h = len(col) * (NODE_H + GAP)
        if col and col[-1] not in sources:     # no arrow (nor its label) below the last node
            chain_h -= GAP - OTHER_GAP
        ox = left + PAD + (NODE_W + 48 if col else 0)
        for j, thread in enumerate(others[pid]):
            key = (pid, thread.tid)
            is_culprit = key == culprit_key
            r, c = divmod(j, max(1, other_cols if col else OTHER_COLS))
            kind = thread.kind or "?"
            node = Node(key, "other", [clean(_thread_name(thread.tid, thread.name), MAX_OTHER_TEXT),
                                       clean(("CULPRIT \u00b7 " if is_culprit else "") + kind, MAX_OTHER_TEXT)],
                        "%spid %s tid %s '%s'\nkind: %s%s\nnot on the chain" % (
                            "the verdict's culprit\n" if is_culprit else "", pid, thread.tid, clean(thread.name),
                            clean(kind), "\n" + clean(thread.state_text) if thread.state_text else ""),
                        x=ox + c * (OTHER_W + 10), y=y + HEADER + r * (OTHER_H + OTHER_GAP), w=OTHER_W, h=OTHER_H,
                        pid=pid, tid=thread.tid, band=_band(thread), culprit=is_culprit)
            nodes.append(node)
            by_key[key] = node
        rows = -(-len(others[pid]) // max(1, other_cols if col else OTHER_COLS))
        others_h = rows * (OTHER_H + OTHER_GAP) + (OTHER_GAP if rows else 0)
        total = len(proc.threads) if proc is not None else sum(1 for k in col if by_key[k].role == "chain")
        shown = sum(1 for k in col if by_key[k].role == "chain") + len(others[pid])
        hidden = max(0, total - shown)
        h = HEADER + max(chain_h, others_h, NODE_H) + (FOOT if hidden else 0) + PAD // 2
        role = proc.role if proc is not None else next((s.role for s in chain if s.pid == pid and s.role), None)
        workers = next((s.text.split(" (e.g.")[0] for s in chain if s.pid == pid and s.edge == "workers" and s.text),
                       None)
        title = "pid %s%s%s" % (pid, " \u00b7 %s" % clean(role) if role else "",
                                " \u00b7 %s" % command_text(proc, 70) if proc is not None else "")
        if workers:
            title += " \u00b7 one of " + clean(workers)
        tip = "pid %s%s\n%s\n%d thread%s%s" % (
            pid, " (%s)" % clean(role) if role else "", command_text(proc, 300) if proc is not None else "not inspected",
            total, "" if total == 1 else "s", ", %d not drawn" % hidden if hidden else "")
        boxes.append(Box(pid, clean(title, int((box_w - 2 * PAD) / 7)), tip, total, hidden, left, y, box_w, h,
                         culprit=any(n.culprit for n in nodes if n.pid == pid)))
        y += h + BOX_GAP

    width = left + box_w + PAD
    height = y - BOX_GAP + TOP
    _route(arrows, by_key, column, left)
    cycle = any(a.cycle for a in arrows)
    for a in arrows:
        if a.on_cycle:
            by_key[a.src].on_cycle = by_key[a.dst].on_cycle = True
    first, last = chain[0], chain[-1]
    summary = "wait-for chain of %d step%s from pid %s tid %s to pid %s tid %s%s" % (
        len(chain), "" if len(chain) == 1 else "s", first.pid, first.tid, last.pid, last.tid,
        ", closing a cycle" if cycle else "")
    return Picture(width, height, boxes, nodes, arrows, left_out, cycle, summary)


def _arrows(report, chain, indexes, step_key, by_key, cycle_to, end_words, left_out):
    """An arrow per wait: each step to the next (through the gap node of a long chain), the
    last one's cycle-closing edge or its end."""
    arrows = []
    drawn = [i for i in indexes if i is not None]

    def label_of(waiter, edge, words):
        wait = _wait_text(waiter)
        words = _words(words, edge)
        lines = [clean(words, MAX_LABEL)]
        if wait:
            lines.append(clean(wait, MAX_LABEL))
        tip = "pid %s tid %s %s%s" % (waiter.pid, waiter.tid, clean(words),
                                      "\nin the kernel: " + clean(wait) if wait else "")
        if edge:
            tip += "\nedge kind: %s" % clean(edge)
        return lines, tip

    previous = None
    for pos, index in enumerate(indexes):
        if index is None:
            waiter = chain[previous]
            lines, tip = label_of(waiter, None, None)
            arrows.append(Arrow(step_key[previous], ("gap",), None, lines, tip))
            nxt = indexes[pos + 1]
            arrows.append(Arrow(("gap",), step_key[nxt], chain[nxt].edge,
                                ["%d steps left out" % left_out], "%d steps left out" % left_out))
            previous = None
            continue
        if previous is not None:
            lines, tip = label_of(chain[previous], chain[index].edge, chain[index].waits_for)
            arrows.append(Arrow(step_key[previous], step_key[index], chain[index].edge, lines, tip))
        previous = index
    last = len(chain) - 1
    end = chain[-1].end if isinstance(chain[-1].end, dict) else {}
    if cycle_to is not None:
        target = step_key.get(cycle_to, ("gap",) if ("gap",) in by_key else step_key[drawn[0]])
        lines, tip = label_of(chain[last], end.get("edge"), end.get("waits_for"))
        lines[0] = clean("cycle: " + lines[0], MAX_LABEL)
        arrows.append(Arrow(step_key[last], target, end.get("edge"), lines, tip + "\nthis edge closes the cycle",
                            cycle=True, on_cycle=True))
        # the loop: every arrow from the step it closes on down to the last
        loop_keys = {step_key[i] for i in range(cycle_to, len(chain)) if i in step_key}
        if ("gap",) in by_key and cycle_to < drawn[len(drawn) // 2]:
            loop_keys.add(("gap",))
        for a in arrows:
            if a.src in loop_keys and a.dst in loop_keys:
                a.on_cycle = True
    elif end_words is not None:
        lines, tip = label_of(chain[last], end.get("edge"), end.get("waits_for"))
        if end.get("resource"):
            lines[0] = clean("waits for " + end_words, MAX_LABEL)
        arrows.append(Arrow(step_key[last], ("end",), end.get("edge"), lines, tip))
    return arrows


def _lane(arrow, column):
    """Whether an arrow goes round by the lane: it does not lead to the next node down the column."""
    if arrow.src not in column or arrow.dst not in column:
        return True
    return column.index(arrow.dst) != column.index(arrow.src) + 1


def _route(arrows, by_key, column, left):
    lane = 0
    for a in arrows:
        src, dst = by_key[a.src], by_key[a.dst]
        sx = src.x + ARROW_DX
        below = src.y + src.h
        if not _lane(a, column):
            a.points = [(sx, below), (sx, dst.y)]
        else:
            lane_x = left - LANE * (lane + 1) + LANE // 2
            lane += 1
            turn = below + 10
            a.points = [(sx, below), (sx, turn), (lane_x, turn), (lane_x, dst.cy), (dst.x, dst.cy)]
        a.label_at = (sx + 9, below + 22)


# --- the markup -------------------------------------------------------------------------------

def _tint(color, keep=0.22):
    """color mixed with white: keep of it."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#%02x%02x%02x" % tuple(int(255 - (255 - c) * keep) for c in (r, g, b))


def _data_attr(value):
    return esc("" if value is None else value)


def svg(picture):
    """The picture as an inline <svg> (no script, every text escaped)."""
    out = ['<svg xmlns="http://www.w3.org/2000/svg" id="chain-svg" class="chain-picture" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="DejaVu Sans, Arial, sans-serif" '
           'font-size="11">' % (picture.width, picture.height, picture.width, picture.height, esc(picture.summary)),
           '<defs>'
           '<marker id="chain-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="%s"/></marker>'
           '<marker id="chain-head-cycle" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="%s"/></marker>'
           '</defs>' % (ARROW_COLOR, CYCLE_COLOR)]
    for box in picture.boxes:
        out.append('<g class="box%s" data-pid="%s"><title>%s</title>'
                   '<rect x="%g" y="%g" width="%g" height="%g" rx="6" fill="#f7f7f5" stroke="%s" stroke-width="%g"/>'
                   '<text x="%g" y="%g" font-weight="bold" fill="#333">%s</text>' % (
                       " culprit-box" if box.culprit else "", _data_attr(box.pid), esc(box.tip),
                       box.x, box.y, box.w, box.h, "#999" if not box.culprit else CULPRIT_COLOR,
                       1 if not box.culprit else 1.5, box.x + PAD, box.y + 17, esc(box.title)))
        if box.hidden:
            out.append('<text x="%g" y="%g" class="more" fill="#666">+ %d more thread%s not drawn (%d in all)</text>' % (
                box.x + box.w - PAD, box.y + box.h - 7, box.hidden, "" if box.hidden == 1 else "s", box.threads))
            out[-1] = out[-1].replace('<text ', '<text text-anchor="end" ', 1)
        out.append("</g>")
    for a in picture.arrows:
        color = CYCLE_COLOR if a.on_cycle else ARROW_COLOR
        d = "M" + "L".join("%g,%g" % p for p in a.points)
        out.append('<g class="arrow%s%s" data-edge="%s"><title>%s</title>'
                   '<path d="%s" fill="none" stroke="%s" stroke-width="%g"%s marker-end="url(#%s)"/>' % (
                       " cycle" if a.cycle else "", " on-cycle" if a.on_cycle else "", esc(a.edge or ""),
                       esc(a.tip), d, color, 2 if a.on_cycle else 1.4,
                       ' stroke-dasharray="6,3"' if a.cycle else "",
                       "chain-head-cycle" if a.on_cycle else "chain-head"))
        lx, ly = a.label_at
        width = max(len(line) for line in a.label) * 6.3 + 8 if a.label else 0
        out.append('<rect x="%g" y="%g" width="%g" height="%g" fill="#fff" fill-opacity="0.85"/>' % (
            lx - 3, ly - 11, width, 14 * len(a.label) + 2))
        for i, line in enumerate(a.label):
            out.append('<text x="%g" y="%g" fill="%s"%s>%s</text>' % (
                lx, ly + 14 * i, CYCLE_COLOR if a.on_cycle else "#222",
                ' font-weight="bold"' if i == 0 else "", esc(line)))
        out.append("</g>")
    for n in picture.nodes:
        color = BAND_COLORS.get(n.band, BAND_COLORS["other"])
        classes = ["node", n.role] + (["culprit"] if n.culprit else []) + (["on-cycle"] if n.on_cycle else [])
        attrs = ' data-pid="%s" data-tid="%s"' % (_data_attr(n.pid), _data_attr(n.tid)) if n.pid is not None else ""
        if n.step is not None:
            attrs += ' data-step="%d"' % n.step
        if n.role in ("end", "gap"):
            fill, stroke, width, dash = "#ffffff", "#777777", 1.2, ' stroke-dasharray="4,3"'
        elif n.culprit:
            fill, stroke, width, dash = _tint(color), CULPRIT_COLOR, 3.2, ""
        else:
            fill, stroke, width, dash = _tint(color), color, 1.2, ""
        out.append('<g class="%s"%s><title>%s</title><rect x="%g" y="%g" width="%g" height="%g" rx="4" fill="%s" '
                   'stroke="%s" stroke-width="%g"%s/>' % (
                       " ".join(classes), attrs, esc(n.tip), n.x, n.y, n.w, n.h, fill, stroke, width, dash))
        if n.role in ("chain", "other"):   # the band, as a strip at the node's left
            out.append('<rect x="%g" y="%g" width="5" height="%g" fill="%s"/>' % (n.x + 1.5, n.y + 1.5, n.h - 3, color))
        for i, line in enumerate(n.lines):
            bold = i == 0 or (n.culprit and i == 1)
            out.append('<text x="%g" y="%g"%s fill="%s">%s</text>' % (
                n.x + 10, n.y + (15 if n.h > OTHER_H else 13) + i * 14, ' font-weight="bold"' if bold else "",
                CULPRIT_COLOR if n.culprit and i == 1 else "#222", esc(line)))
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


LEGEND = ("Processes are boxes, threads nodes (tinted by what the /proc samples saw them do, as in the "
          "timeline), each wait an arrow labelled with what it waits on. The verdict's culprit is outlined in "
          "red and labelled CULPRIT. A cycle (a deadlock) is drawn in red, its closing arrow dashed, going back "
          "up the lane at the left. Hover a node, box or arrow for more.")


def section(report):
    """The HTML section of the picture, or "" without a chain."""
    picture = layout(report)
    if picture is None:
        return ""
    notes = []
    if picture.cycle:
        notes.append("The chain closes a cycle (drawn in red): each thread of the cycle waits on the next, so none "
                     "of them can move.")
    if picture.left_out:
        notes.append("%d steps of the middle of the chain are left out." % picture.left_out)
    return ('<section id="chain-picture"><h2>Wait-for chain</h2><p class="help">%s</p>%s'
            '<div class="chain-figure">%s</div></section>' % (
                esc(LEGEND), "".join('<p class="note">%s</p>' % esc(n) for n in notes), svg(picture)))
