"""Command line: `stalldiag inspect PID`, `stalldiag report FILE.json`."""
import os
import signal
import sys

import click

from . import __version__, capture as capture_mod, render
from .errors import CaptureError, OutputError, StalldiagError
from .report import build_report

SIGNAL_EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _fail(message, code):
    click.echo("stalldiag: error: %s" % message, err=True)
    sys.exit(code)


def check_outputs(paths):
    """Refuse unwritable or unknown outputs before sampling starts, not after."""
    plan = []
    for path in paths:
        fmt = render.format_for_path(path)
        if fmt is None:
            raise OutputError("%s: unknown report format (use .json, .md, .html, .txt or .speedscope.json)" % path)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise OutputError("%s: directory %s does not exist" % (path, directory))
        if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
            raise OutputError("%s: not writable" % path)
        plan.append((path, fmt))
    return plan


def write_report(report, plan):
    for path, fmt in plan:
        text = render.render(report, fmt)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise OutputError("%s: cannot write: %s" % (path, exc.strerror or exc))


def emit(report, plan, as_json):
    write_report(report, plan)
    if as_json:
        sys.stdout.write(render.render(report, "json"))
    else:
        sys.stdout.write(render.render(report, "text", color=sys.stdout.isatty()))
    sys.stdout.flush()


class Progress:
    """A one-line progress meter on stderr, only on a TTY."""

    def __init__(self):
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, elapsed, total, processes, threads):
        if not self.enabled:
            return
        width = 24
        done = int(width * min(elapsed / total, 1.0)) if total else width
        sys.stderr.write("\rstalldiag: [%s%s] %4.1f/%.0f s  %d processes  %d threads " % (
            "#" * done, "." * (width - done), elapsed, total, processes, threads))
        sys.stderr.flush()
        self.shown = True

    def notice(self, message):
        if self.enabled:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    def clear(self):
        if self.shown:
            sys.stderr.write("\r" + " " * 78 + "\r")
            sys.stderr.flush()


class StopOnSignal:
    """Turn SIGINT/SIGTERM into a flag so sampling ends and the report is still written."""

    def __init__(self):
        self.reason = None

    def __enter__(self):
        self._old = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, _frame):
        self.reason = signal.Signals(signum).name

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        return False

    def __call__(self):
        return self.reason


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stalldiag")
def cli():
    """Why has a training run stopped making visible progress?"""


@cli.command()
@click.argument("pid", type=int)
@click.option("--children", is_flag=True, help="Also inspect every descendant process (ranks, workers, compilers).")
@click.option("--duration", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Sampling window in seconds; 0 takes a single snapshot.")
@click.option("--rate", type=click.FloatRange(min=0.5, max=1000), default=10.0, show_default=True,
              help="Samples per second of every thread's state, syscall and Python stack.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="PATH",
              help="Write the report here; format from the extension (.json, .md, .html, .txt, "
                   ".speedscope.json). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout instead of the summary.")
@click.option("--native", is_flag=True,
              help="Add native frames (py-spy --native). This pauses the target at each sample: opt-in.")
@click.option("--syscalls", type=click.Choice(["sampled", "exact"]), default="sampled", show_default=True,
              help="exact: also count every syscall of every thread (bpftrace, perf or strace).")
@click.option("--syscalls-backend", type=click.Choice(["bpftrace", "perf", "strace"]), default=None,
              help="Force one exact-count backend instead of the least intrusive that works.")
def inspect(pid, children, duration, rate, outputs, as_json, native, syscalls, syscalls_backend):
    """Sample process PID (and with --children its whole tree) and say what it waits on."""
    from .session import Inspection
    try:
        plan = check_outputs(outputs)
        progress = Progress()
        with StopOnSignal() as stop:
            inspection = Inspection(pid, children=children, duration=duration, rate=rate, native=native,
                                    progress=progress, stop_flag=stop, syscalls=syscalls,
                                    syscall_backend=syscalls_backend, notice=progress.notice)
            if native:
                inspection.limitations.append("--native: py-spy paused the target briefly at each sample "
                                              "(native unwinding cannot run non-blocking)")
            cap = inspection.run()
            progress.clear()
        report = build_report(cap)
        skipped = cap.get("skipped_children") or 0
        if skipped and sys.stderr.isatty():
            click.echo("stalldiag: note: PID %d has %d child process(es) not inspected; add --children"
                       % (pid, skipped), err=True)
        emit(report, plan, as_json)
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)
    interrupted = (cap.get("window") or {}).get("interrupted")
    if interrupted:
        click.echo("stalldiag: interrupted by %s; report covers %.1f s" % (
            interrupted, cap["window"]["duration_s"]), err=True)
        sys.exit(SIGNAL_EXIT.get(interrupted, 130))


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "outputs", multiple=True, metavar="PATH",
              help="Write the re-rendered report here (.json, .md, .html, .txt, .speedscope.json). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout.")
def report(file, outputs, as_json):
    """Re-diagnose and re-render a saved JSON report or capture."""
    try:
        plan = check_outputs(outputs)
        cap = capture_mod.load_report(file)
        try:
            rep = build_report(cap)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise CaptureError("%s: malformed capture (%s: %s)" % (file, type(exc).__name__, exc))
        emit(rep, plan, as_json)
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)


def main():
    try:
        cli(prog_name="stalldiag")
    except KeyboardInterrupt:
        _fail("interrupted", 130)


if __name__ == "__main__":
    main()
