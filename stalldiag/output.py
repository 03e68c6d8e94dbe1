"""Writing a report: every output rendered in memory first, then written; the capture kept when a
renderer fails.  Shared by `stalldiag inspect`, `report` and `watch`."""
import os
import sys

from . import render
from .errors import OutputError
from .report import failure_text, record_failure


def check_outputs(paths):
    """Refuse unwritable or unknown outputs before sampling starts, not after."""
    plan = []
    for path in paths:
        fmt = render.format_for_path(path)
        if fmt is None:
            raise OutputError("%s: unknown report format (use .json, .md, .html, .txt or .speedscope.json)" % path)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.stat(directory)
        except PermissionError:
            raise OutputError("%s: directory %s cannot be reached: permission denied" % (path, directory))
        except OSError:
            raise OutputError("%s: directory %s does not exist" % (path, directory))
        existed = os.path.exists(path)
        try:
            # Really open it: root passes os.access() on a read-only filesystem.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError as exc:
            raise OutputError("%s: not writable: %s" % (path, exc.strerror or exc))
        if not existed:
            os.unlink(path)
        plan.append((path, fmt))
    return plan


def render_all(report, plan, as_json):
    """Every output rendered in memory first: a write failure leaves no half-written files.

    A renderer that raises is recorded in report.failures and its output skipped;
    the others still run. JSON is rendered last, so it records every failure before it.
    """
    done = {}

    def attempt(fmt, color=False):
        if (fmt, color) not in done:
            try:
                done[fmt, color] = render.render(report, fmt, color=color)
            except Exception as exc:
                record_failure(report, "%s rendering" % fmt, exc)
                done[fmt, color] = None
        return done[fmt, color]

    texts = {path: attempt(fmt) for path, fmt in plan if fmt != "json"}
    stdout = None if as_json else attempt("text", color=sys.stdout.isatty())
    if as_json or any(fmt == "json" for _path, fmt in plan):
        json_text = render_json(report)
        texts.update((path, json_text) for path, fmt in plan if fmt == "json")
        stdout = json_text if as_json else stdout
    return [(path, texts[path]) for path, _fmt in plan if texts[path] is not None], stdout


def render_json(report):
    """The JSON report; should even that fail, the capture with the failures."""
    try:
        return render.render(report, "json")
    except Exception as exc:
        record_failure(report, "json rendering", exc)
        import json
        return json.dumps({"report_version": report.report_version, "schema_version": report.schema_version,
                           "tool": report.capture.get("tool"), "limitations": report.limitations,
                           "failures": [f.to_dict() for f in report.failures], "capture": report.capture},
                          default=repr) + "\n"


def capture_fallback_path(pid):
    """Where the capture goes when diagnosis or rendering failed and no -o .json was asked for:
    ./stalldiag-capture-PID-TIME.json, else the same name in $TMPDIR."""
    import tempfile
    import time
    name = "stalldiag-capture-%d-%s.json" % (pid, time.strftime("%Y%m%d-%H%M%S"))
    for directory in (os.getcwd(), tempfile.gettempdir()):
        path = os.path.join(directory, name)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return path
        except OSError:
            continue
    return None


def write_report(texts, mode=0o600):
    for path, text in texts:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            os.fchmod(fd, mode)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise OutputError("%s: cannot write: %s" % (path, exc.strerror or exc))


def emit(report, plan, as_json, mode=0o600, pid=0):
    """Render and write every output; return the JSON files that hold the capture (after a
    failure, a fallback file when no -o .json was given)."""
    texts, stdout = render_all(report, plan, as_json)
    saved = [path for path, fmt in plan if fmt == "json"]
    if report.failures and not saved:
        path = capture_fallback_path(pid)    # the samples must outlive the bug
        if path:
            texts.append((path, render_json(report)))
            saved.append(path)
    write_report(texts, mode)
    if stdout:
        sys.stdout.write(stdout)
        sys.stdout.flush()
    return saved


def failed_message(report, saved, plan=()):
    """One line: what failed and where, and where the capture is."""
    failures = report.failures
    text = failure_text(failures[0]) + ("" if len(failures) == 1 else " (and %d more)" % (len(failures) - 1))
    if saved:
        where = saved[0] if os.path.dirname(saved[0]) else "./" + saved[0]
        return "%s; %sthe capture is saved in %s (`stalldiag report %s` re-renders it); please report this bug" % (
            text, "" if any(fmt == "json" for _path, fmt in plan) else "no -o .json was given: ", where, where)
    return "%s; the capture could not be saved (no -o .json given, and neither the current directory " \
           "nor $TMPDIR is writable)" % text
