"""Command line: `stalldiag inspect PID`, `stalldiag report FILE.json`."""
import os
import signal
import sys

import click

from . import __version__, capture as capture_mod
from .config import Config
from .errors import EXIT_CODES, CaptureError, OutputError, StalldiagError
from .output import check_outputs, emit, failed_message, render_all, write_report
from .report import build, build_or_fallback, failure_text

SIGNAL_EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _fail(message, code):
    click.echo("stalldiag: error: %s" % message, err=True)
    sys.exit(code)


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


def _octal(ctx, param, value):
    try:
        return int(value, 8) & 0o777
    except ValueError:
        raise click.BadParameter("%r is not an octal umask such as 077 or 022" % value)


UMASK_OPTION = click.option(
    "--umask", default="077", show_default=True, callback=_octal, metavar="OCTAL",
    help="Mask for the report files' mode. Reports may hold command lines and paths: 077 keeps them "
         "private (0600); 022 makes them world-readable.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stalldiag")
def cli():
    """Why has a training run stopped making visible progress?"""


@cli.command()
@click.argument("pid", type=int, required=False)
@click.option("--children", is_flag=True, help="Also inspect every descendant process (ranks, workers, compilers).")
@click.option("--match", metavar="REGEX", default=None,
              help="Without PID: only consider runs whose command line matches REGEX.")
@click.option("--host-label", metavar="NAME", default=None,
              help="Name this host in the report (default: Slurm's node name inside a Slurm step, else the "
                   "hostname), for `stalldiag merge`.")
@click.option("--slurm-job", metavar="JOBID", default=None,
              help="Inspect every node of this running Slurm job (srun --overlap, one stalldiag per node; reports "
                   "in ./stalldiag-slurm-JOBID-TIME/, on a filesystem the nodes share) and merge the reports.")
@click.option("--duration", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Sampling window in seconds; 0 takes a single snapshot.")
@click.option("--rate", type=click.FloatRange(min=0.5, max=1000), default=5.0, show_default=True,
              help="Samples per second of every thread's state and current syscall (/proc).")
@click.option("--stack-rate", type=click.FloatRange(min=0.5, max=100), default=3.0, show_default=True,
              help="Python stack samples per second per process (py-spy). Each costs more than a /proc "
                   "sample; stacks of a stalled run change slowly.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="PATH",
              help="Write the report here; format from the extension (.json, .md, .html, .txt, "
                   ".speedscope.json). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout instead of the summary.")
@click.option("--native", is_flag=True,
              help="Add native frames (py-spy --native). This pauses the target at each sample: opt-in.")
@click.option("--native-dumps", type=click.IntRange(min=0, max=20), default=0, show_default=True,
              help="Take N native stack snapshots (py-spy dump --native) of the busiest processes at the window's "
                   "end, to say where their CPU goes below Python. Each stops the process for one unwind (ms): "
                   "opt-in.")
@click.option("--syscalls", type=click.Choice(["sampled", "exact"]), default="sampled", show_default=True,
              help="exact: also count every syscall of every thread (bpftrace, perf or strace).")
@click.option("--syscalls-backend", type=click.Choice(["bpftrace", "perf", "strace"]), default=None,
              help="Force one exact-count backend instead of the least intrusive that works.")
@click.option("--locals", "locals_", is_flag=True,
              help="Also record local variables of the innermost frames (truncated and redacted). Off by default: "
                   "values may hold data you do not want in a ticket.")
@UMASK_OPTION
def inspect(pid, children, match, host_label, duration, rate, stack_rate, outputs, as_json, native, native_dumps,
            syscalls, syscalls_backend, locals_, umask, slurm_job):
    """Sample process PID (and with --children its whole tree) and say what it waits on.

    Without PID, find the training run (GPU holders, launchers, busiest Python jobs) and
    inspect its whole tree from the launcher down."""
    from .session import Inspection
    config = Config(pid=pid, children=children, duration=duration, rate=rate, stack_rate=stack_rate, native=native,
                    native_dumps=0 if native else native_dumps, syscalls=syscalls,
                    syscall_backend=syscalls_backend, locals=locals_,
                    host_label=host_label or os.environ.get("SLURMD_NODENAME"))
    if slurm_job is not None:
        from .slurm import inspect_job
        try:
            check_outputs(outputs)
            files = inspect_job(slurm_job, config)
        except StalldiagError as exc:
            _fail(str(exc), exc.exit_code)
        return click.get_current_context().invoke(merge, files=files, outputs=outputs, as_json=as_json, umask=umask)
    try:
        plan = check_outputs(outputs)
        discovered = None
        if pid is None:
            from .discovery import choose_target
            from .slurm import step_target
            # inside a step of a Slurm job (srun --overlap --jobid): that job's processes on this node
            pid, discovered = (None if match else step_target()) or choose_target(match)
            # the launcher and every rank and worker below it
            config = config.but(pid=pid, children=True, discovered=discovered)
            if sys.stderr.isatty():
                click.echo("stalldiag: inspecting pid %d and its tree (%s)" % (pid, discovered), err=True)
        progress = Progress()
        with StopOnSignal() as stop:
            cap = Inspection(config, progress=progress, stop_flag=stop, notice=progress.notice).run()
            progress.clear()
        report = build_or_fallback(cap)
        skipped = cap.get("skipped_children") or 0
        if skipped and sys.stderr.isatty():
            click.echo("stalldiag: note: PID %d has %d child process(es) not inspected; add --children"
                       % (pid, skipped), err=True)
        saved = emit(report, plan, as_json, 0o666 & ~umask, pid)
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)
    if report.failures:
        _fail(failed_message(report, saved, plan), EXIT_CODES["partial"])
    if cap.get("permission_denied"):
        from .permissions import how_to_get_access
        root = next((p for p in cap["processes"] if p["pid"] == pid), {})
        _fail("permission denied reading PID %d's syscalls or Python stacks; the report holds what was "
              "still observed. To see the rest: %s" % (pid, how_to_get_access(root.get("uid"))), 5)
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
@UMASK_OPTION
def report(file, outputs, as_json, umask):
    """Re-diagnose and re-render a saved JSON report or capture."""
    try:
        plan = check_outputs(outputs)
        cap = capture_mod.load_report(file)
        try:
            rep = build(cap)
        except Exception as exc:  # untrusted input: any inconsistency is a bad file, not a crash
            raise CaptureError("%s: malformed capture (%s: %s)" % (file, type(exc).__name__, str(exc)[:200]))
        texts, stdout = render_all(rep, plan, as_json)
        if rep.failures:
            raise CaptureError("%s: malformed capture (%s)" % (file, failure_text(rep.failures[0])[:300]))
        write_report(texts, 0o666 & ~umask)
        sys.stdout.write(stdout)
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)


def _interval(ctx, param, value):
    from .watch import parse_interval
    try:
        return parse_interval(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc))


@cli.command()
@click.argument("pid", type=int, required=False)
@click.option("--children", is_flag=True, help="Watch and inspect every descendant too.")
@click.option("--match", metavar="REGEX", default=None, help="Without PID: only runs whose command matches.")
@click.option("--every", default="60s", show_default=True, callback=_interval, metavar="INTERVAL",
              help="Time between light checks (30s, 10m, 1h).")
@click.option("--stall-after", default="10m", show_default=True, callback=_interval, metavar="INTERVAL",
              help="No progress for this long is a stall: inspect and report it (once per stall).")
@click.option("--report-dir", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where stall reports (Markdown, JSON, HTML) are written, with timestamped names.")
@click.option("--exec", "exec_cmd", default=None, metavar="CMD",
              help="Run CMD with the report path after each report ({} is replaced by it, else appended).")
@click.option("--duration", type=click.FloatRange(min=1), default=10.0, show_default=True,
              help="Window of the full inspection run at a stall.")
def watch(pid, children, match, every, stall_after, report_dir, exec_cmd, duration):
    """Watch a run unattended; when it stops making progress, write one report per stall."""
    from .targets import check_target
    from .watch import Watcher, log_line
    try:
        if pid is None:
            from .discovery import choose_target
            pid, _why = choose_target(match)
            children = True
        check_target(pid)
        try:
            os.makedirs(report_dir, mode=0o700, exist_ok=True)   # an output directory is made, like mkdir -p
        except OSError as exc:
            raise OutputError("--report-dir %s: cannot create it: %s" % (report_dir, exc.strerror or exc))
        check_outputs([os.path.join(report_dir, "stalldiag-probe.json")])
        with StopOnSignal() as stop:
            watcher = Watcher(Config(pid=pid, children=children, duration=duration), every, stall_after, report_dir,
                              exec_cmd, log=log_line, sleep=lambda s: _sleep_unless(stop, s))
            code = watcher.run_until(stop)
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)
    sys.exit(code)


def _sleep_unless(stop, seconds):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop():
        time.sleep(min(0.2, end - time.monotonic()))


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", "outputs", multiple=True, metavar="PATH",
              help="Write the merged report here (.md, .json, .html, .txt). Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the merged report as JSON (every rank).")
@click.option("--ranks", "show_ranks", type=click.Choice(["classes", "all"]), default="classes", show_default=True,
              help="classes: the ranks' classes by stack and the outliers (short whatever the job's size); "
                   "all: also every rank on a line of its own (text and Markdown).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Processes reading and re-diagnosing the reports (default: the CPUs, at most 8).")
@UMASK_OPTION
def merge(files, outputs, as_json, umask, show_ranks="classes", jobs=None):
    """Join per-host JSON reports of one job into one verdict: the ranks' classes by stack, and
    which rank on which host is the outlier."""
    from .merge import merge_reports
    from .render import render_incident
    all_ranks = show_ranks == "all"
    try:
        plan = check_outputs(outputs)
        try:
            merged = merge_reports(files, jobs=jobs)
        except StalldiagError:
            raise
        except Exception as exc:
            raise CaptureError("malformed report among %s%s (%s: %s)" % (
                ", ".join(files[:3]), " and %d more" % (len(files) - 3) if len(files) > 3 else "",
                type(exc).__name__, exc))
        write_report([(path, render_incident(merged, fmt, all_ranks=all_ranks)) for path, fmt in plan],
                     0o666 & ~umask)
        sys.stdout.write(render_incident(merged, "json" if as_json else "text", all_ranks=all_ranks))
    except StalldiagError as exc:
        _fail(str(exc), exc.exit_code)


def main():
    try:
        cli(prog_name="stalldiag")
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:  # a bug: one line for the user, the traceback on request
        if os.environ.get("STALLDIAG_DEBUG"):
            raise
        _fail("internal error: %s: %s (rerun with STALLDIAG_DEBUG=1 for the traceback, and please report it)"
              % (type(exc).__name__, exc), 1)


if __name__ == "__main__":
    main()
