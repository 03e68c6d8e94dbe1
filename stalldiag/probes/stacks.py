"""Python stacks of every thread: `py-spy record` for busy processes, `py-spy dump` for idle ones.

py-spy runs as a subprocess in --nonblocking mode: it reads the target's
memory with process_vm_readv and never pauses it.  What it costs (measured on
12-thread processes): ~10-15 ms to attach (it reads the interpreter's symbols)
and ~2 ms per sample (~600 small memory reads), so a dump is ~15-18 ms and a
1 Hz recording of a 10 s window ~30-45 ms.  The session decides which each
process gets (StacksProbe, below).  Recorders write speedscope JSON, which keeps every
thread's samples in order; dumps are read as JSON.
"""
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import field
from typing import Dict, List, Optional, Tuple

from ..records import typed_record
from .. import procfs, sources
from ..errors import last_line
from ..helpers import die_with_parent, intern_row
from .base import Probe, Section
from .threads import NANOSLEEPS
from .thread_ids import ThreadIdMap

# "Process 12 Thread 34 "name"" with --subprocesses, "Thread 34 "name"" without.  Where
# py-spy knows no kernel tid (Python < 3.11 in --nonblocking mode) it names the pthread
# id in hex, "Thread 0x7F147A5BD6C0 "name"", which thread_ids.py maps to a tid.
PROFILE_NAME = re.compile(r'^(?:Process (\d+) )?Thread (0x[0-9A-Fa-f]+|\d+)(?: "(.*)")?$', re.S)
MIN_PYSPY = (0, 3, 10)
# failures another try will not mend (a "gone" process is checked first: py-spy says
# "No such file or directory" for other reasons too)
FINAL_FAILURES = ("not-python", "unsupported-python", "permission", "gone")
# py-spy's words when a non-blocking read raced the target: the frame chain changed under it
# (a deep stack that moves fast, as inductor's lowering does: ~73% of dumps measured).  Its
# samples of that moment are lost, or worse, cut short: a few inner frames with no root.
READ_ERRORS = re.compile(r"Failed to get stack traces|copy PyFrameObject|Bad address"
                         r"|Failed to find a python interpreter|\bErrors: [1-9]", re.M)
# The outermost frame of a whole Python stack: the main thread's module code (runpy's, under
# `python -m`), or the bootstrap of a threading.Thread.  A sample of a thread that has whole
# ones and ends anywhere else was torn by a racing read.
ROOT_FUNCTIONS = ("<module>", "_run_module_as_main", "_bootstrap")

# Lines of py-spy's stderr that explain a failure, and what to tell the user.
PYSPY_FAILURES = (
    ("Permission denied", "permission"),
    ("Operation not permitted", "permission"),
    ("Failed to find python version", "not-python"),
    ("Unsupported version of Python", "unsupported-python"),
    ("Failed to get process executable name", "gone"),
    ("No such file or directory", "gone"),
    ("No such process", "gone"),
)


def find_pyspy():
    """Path of the py-spy binary: $STALLDIAG_PYSPY, beside this Python (its venv), then PATH."""
    import sys
    override = os.environ.get("STALLDIAG_PYSPY")
    if override is not None:
        return override if os.access(override, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")


_SETPRIV = shutil.which("setpriv")


def spawn(argv, **kwargs):
    """Popen a helper that gets SIGTERM if stalldiag dies.  Through `setpriv --pdeathsig`
    when it exists: no Python preexec_fn, so Popen can vfork, ~0.2 ms instead of a fork
    that runs Python in the child (tens of ms each for 160 recorders on a loaded machine)."""
    if _SETPRIV:
        return subprocess.Popen([_SETPRIV, "--pdeathsig", "TERM", "--"] + argv, **kwargs)
    return subprocess.Popen(argv, preexec_fn=die_with_parent, **kwargs)


def pyspy_dump(pid, with_locals=False, binary=None):
    """The threads of one `py-spy dump --json --nonblocking` of pid (py-spy's JSON), or None."""
    binary = binary or find_pyspy()
    if binary is None:
        return None
    argv = [binary, "dump", "--pid", str(pid), "--json", "--nonblocking"] + (["--locals"] if with_locals else [])
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20, preexec_fn=die_with_parent)
        return json.loads(out.stdout) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def pyspy_native_dump(pid, binary=None):
    """The threads of one `py-spy dump --json --native` of pid, or None.  Native unwinding stops
    the process for the moment of the unwind (py-spy attaches, reads, detaches)."""
    binary = binary or find_pyspy()
    if binary is None:
        return None
    argv = [binary, "dump", "--pid", str(pid), "--json", "--native"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, preexec_fn=die_with_parent)
        return json.loads(out.stdout) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def most_common_stack(stacks):
    """The stack (a list of frame ids) that occurs most often in a thread's samples, or []."""
    counts = {}
    for stack in stacks:
        counts[tuple(stack)] = counts.get(tuple(stack), 0) + 1
    return list(max(counts, key=counts.get)) if counts else []


def dumped_tid(pid, thread, ids):
    """The kernel tid of a thread in py-spy's dump: its os_thread_id, or (Python < 3.11)
    its pthread id mapped through ids (a ThreadIdMap); None if it cannot be matched."""
    tid = thread.get("os_thread_id")
    if tid is None and thread.get("thread_id"):
        tid = ids.resolve(pid, [thread["thread_id"]])[0].get(thread["thread_id"])
    return tid


def pyspy_version(binary):
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in match.groups()) if match else None


class PySpy:
    """Drives one `py-spy record` per busy Python process over the window and one or two
    `py-spy dump`s per idle one (`snapshot`), and merges what they gave, in time order.

    One py-spy per process rather than `--subprocesses`: that mode attaches to
    the children one after the other (85 of 160 processes within a 10 s window,
    measured) and rescans the process table continuously; per-process recorders
    all attach at once.  There is no cap on processes: a large tree lowers the
    sampling rate instead (py-spy's lowest is 1 Hz), and each process's rate is
    kept in `rates`.

    Stopping: py-spy sleeps an exponentially distributed interval (mean 1/rate)
    between samples; after SIGINT its main loop waits for one sample and its
    sampler thread for the next, so it exits a Gamma(2, rate) time later (mean
    2/rate; measured: up to 4 s at 1 Hz for 8 recorders).  Each recorder is asked
    STOP_LEAD_PERIODS periods before the window ends (at most half the window);
    P(not exited STOP_GRACE_S after the window) = e^-x (1 + x), x = rate * (lead
    + grace): 2.7% at 1 Hz.  Those are killed and replaced by one non-blocking
    snapshot each (`late`, named in the report), so no process loses its stacks.
    """

    STOP_LEAD_PERIODS = 5.0
    # py-spy's start-up (~15 ms of CPU: reading the target's binary and maps) is its
    # costliest moment: recorders start one every START_GAP_S, at nice PYSPY_NICE, so
    # 160 of them do not starve the target and the /proc ticks on a 2-core machine.
    START_GAP_S = 0.01
    PYSPY_NICE = 10
    STOP_GRACE_S = 0.5
    THIN_SAMPLES = 4   # fewer stack samples than this from a recorder are named in the report

    def __init__(self, rate, duration, native=False):
        self.rate = max(1, int(round(rate)))
        self.duration = duration
        self.native = native
        self.binary = find_pyspy()
        self.limitation = None
        self.failures = {}      # pid -> (kind, message)
        self.rates = {}         # pid -> Hz its recorder samples at
        self.snapshots = {}     # pid -> [seconds into the window of each snapshot taken]
        self._snapped = {}      # pid -> [(t, threads, frames)] from those snapshots
        self._recorded_at = {}  # pid -> when its recorder was asked for (orders merged stacks)
        self._clock = time.monotonic
        self.t0 = self._clock()     # the window's start, for snapshot times (set by the session)
        self.late = []          # pids whose recorder did not stop in time (stacks from one snapshot)
        self._recorders = {}    # pid -> (Popen, outfile, errfile)
        self._asked = set()     # pids already sent SIGINT
        # Recorders are started by a thread of their own: on a loaded machine each start
        # waits for the child to exec, and 160 of them must not hold up the /proc ticks.
        # Snapshots have another: a dump waits for its output, and a busy process's recorder
        # must not wait behind the dumps of idle ones.
        self._pending = {"record": queue.Queue(), "snapshot": queue.Queue()}
        self._lock = threading.Lock()
        self._starters = {}
        self._started_at = {}   # pid -> when its recorder was started
        self._asked_at = {}     # pid -> when it was asked to stop
        self.thin = []          # (pid, samples, seconds) of recorders that took far fewer samples than asked
        self._closing = False
        self._unstarted = []
        self._end_snapshots = []
        self._tmpdir = None
        self.usable = False
        self.thread_ids = ThreadIdMap()
        self.unmatched = {}     # pid -> [(pthread id, thread name, why)]
        self._racing = set()    # pids whose reads raced the target (py-spy's read errors)

    def start(self):
        if self.binary is None:
            self.limitation = "py-spy not found: no Python stacks (pip install py-spy, or set STALLDIAG_PYSPY)"
            return False
        version = pyspy_version(self.binary)
        if version is not None and version < MIN_PYSPY:
            self.limitation = "py-spy %s is older than %s: no Python stacks" % (
                ".".join(map(str, version)), ".".join(map(str, MIN_PYSPY)))
            return False
        self.usable = True
        return True

    def add(self, pid, rate=None):
        """Start sampling one more process at rate Hz (default: the probe's rate; a no-op
        if it is already sampled).  The recorder starts in the background."""
        if not self.usable or pid in self.rates:
            return
        self.rates[pid] = max(1, int(round(rate or self.rate)))
        self._recorded_at[pid] = self._clock()
        self._queue("record", pid)

    def snapshot(self, pid):
        """One `py-spy dump` of an idle process now, in the background: a blocked thread has
        the same stack at every sample, and a dump costs about half of a 1 Hz recording
        of the window.  snapshot_at_end(pids) asks for one more when its threads moved."""
        if not self.usable or pid in self.snapshots or pid in self.rates:
            return
        self.snapshots[pid] = []
        self._queue("snapshot", pid)

    def _queue(self, kind, pid):
        self._pending[kind].put(pid)
        if kind not in self._starters:
            self._starters[kind] = threading.Thread(target=self._start_pending, args=(kind,),
                                                    name="stalldiag-pyspy-%s" % kind, daemon=True)
            self._starters[kind].start()

    def _start_pending(self, kind):
        while True:
            pid = self._pending[kind].get()
            if pid is None:
                return
            if self._closing:
                self._unstarted.append(pid)   # the window ended first: a snapshot at stop()
                continue
            if kind == "snapshot":
                self._take_snapshots([pid])
                continue
            self._start_recorder(pid, self.rates[pid])
            time.sleep(self.START_GAP_S)

    def snapshot_at_end(self, pids):
        """Snapshot these processes again when the window ends (see stop())."""
        self._end_snapshots = [pid for pid in pids if pid in self.snapshots]

    def _start_recorder(self, pid, rate):
        if self._tmpdir is None:   # only recorders write files: an idle tree needs none
            import tempfile
            self._tmpdir = tempfile.mkdtemp(prefix="stalldiag-")
        outfile = os.path.join(self._tmpdir, "stacks-%d.json" % pid)
        errfile = open(os.path.join(self._tmpdir, "stderr-%d.txt" % pid), "w+")
        # A long --duration: we stop py-spy ourselves with SIGINT at the end of
        # the window (it then writes what it has), so its own timer never cuts
        # sampling short when its start-up took a while.
        cmd = [self.binary, "record", "--pid", str(pid), "--format", "speedscope",
               "--threads", "--idle", "--rate", str(rate),
               "--duration", str(int(self.duration) + 60), "-o", outfile]
        cmd.append("--native" if self.native else "--nonblocking")  # native unwinding pauses the target
        try:
            # py-spy's summary ("Errors: N") is on stdout: it tells a recorder that raced its target
            proc = spawn(cmd, stdout=errfile, stderr=errfile,
                         stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            errfile.close()
            self.failures[pid] = ("error", "py-spy could not start: %s" % exc)
            return
        try:
            os.setpriority(os.PRIO_PROCESS, proc.pid, self.PYSPY_NICE)
        except OSError:
            pass
        with self._lock:
            self._recorders[pid] = (proc, outfile, errfile)
            self._started_at[pid] = self._clock()

    # Dumps of a process whose reads race it, until one gives a whole stack: 6 of 20 dumps of
    # inductor's lowering succeeded (measured), so 20 fail together 0.08% of the time; bounded
    # in time too, a dump costing ~20-50 ms
    SNAPSHOT_TRIES = 20
    SNAPSHOT_TRIES_S = 2.0

    def _take_snapshots(self, pids, tries=1):
        """Non-blocking `py-spy dump`s of each pid, run in parallel, up to `tries` rounds: a pid
        leaves once a dump gave a whole (rooted) stack.  Each result is kept in _snapped with
        its time, and a failure py-spy explains in failures."""
        pending, deadline = list(pids), time.monotonic() + self.SNAPSHOT_TRIES_S
        for _ in range(tries):
            pending = [pid for pid in pending if pid not in self._dump_each(pending)]
            if not pending or time.monotonic() > deadline:
                break

    def _dump_each(self, pids):
        """One dump of each pid; returns the pids whose dump held a rooted stack."""
        started, whole = {}, set()
        for pid in pids:
            try:
                # not through spawn(): a dump ends within milliseconds of its own accord, so
                # setpriv's pdeathsig buys nothing and its exec cost 2 ms a dump
                started[pid] = subprocess.Popen(
                    [self.binary, "dump", "--pid", str(pid), "--json", "--nonblocking"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                    text=True)
            except OSError:
                pass
        for pid, proc in started.items():
            at = round(self._clock() - self.t0, 3)
            try:
                out, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                continue
            got, frames = self._snapshot(pid, out if proc.returncode == 0 else "")
            if got:
                self._snapped.setdefault(pid, []).append((at, got, frames))
                self.snapshots.setdefault(pid, []).append(at)
                self.failures.pop(pid, None)
                if any(_rooted(stack, frames) for p in got.values() for stack in p["stacks"]):
                    whole.add(pid)
            else:
                if READ_ERRORS.search(err or ""):
                    self._racing.add(pid)
                if pid not in self.failures:
                    self.failures[pid] = explain_failure(err or "")
        return whole

    def _snapshot(self, pid, output):
        """The output of one `py-spy dump --json --nonblocking` of pid, in parse_speedscope's shape."""
        try:
            threads = json.loads(output) if output else []
        except ValueError:
            return {}, []
        frames, index, profiles = [], {}, {}
        for thread in threads:
            stack = [intern_row(frames, index, [f.get("name") or "?", f.get("filename") or "", f.get("line") or 0])
                     for f in thread.get("frames") or []]
            tid = thread.get("os_thread_id") or hex(thread.get("thread_id") or 0)
            profiles[(pid, tid)] = {"name": thread.get("thread_name"), "stacks": [stack]}
        return self.match_thread_ids(pid, profiles), frames

    def match_thread_ids(self, pid, profiles):
        """Re-key threads that py-spy named by pthread id ("0x...") by their kernel tid."""
        pending = {key[1]: key for key in profiles if isinstance(key[1], str)}
        if not pending:
            return profiles
        matched, why = self.thread_ids.resolve(pid, [int(h, 16) for h in pending])
        out = {k: v for k, v in profiles.items() if not isinstance(k[1], str)}
        for text, key in pending.items():
            profile = profiles[key]
            tid = matched.get(int(text, 16))
            if tid is None:
                self.unmatched.setdefault(pid, []).append((text, profile.get("name"), why.get(int(text, 16))))
                continue
            profile["pthread_id"] = text
            out[(pid, tid)] = profile
        return out

    def _check_thin(self, pid, got):
        """Note a recorder that took under THIN_SAMPLES samples, or under a quarter of what its rate
        and time asked for (py-spy starved of CPU, failing to read the process, or started late
        because its process turned busy late): its stacks say less."""
        started = self._started_at.get(pid, self._clock())
        span = self._asked_at.get(pid, self._clock()) - started
        taken = max(len(profile["stacks"]) for profile in got.values())
        # also a recorder started late in the window (its process turned busy late): few samples
        if taken < self.THIN_SAMPLES or taken < self.rates[pid] * span / 4:
            self.thin.append((pid, taken, round(span, 1), round(started - self.t0, 1)))

    def lead(self, rate):
        """Seconds before the window's end at which a recorder at rate Hz is asked to stop:
        STOP_LEAD_PERIODS periods, at most half the window."""
        return min(self.STOP_LEAD_PERIODS / rate, self.duration / 2.0)

    def stop_due(self, remaining):
        """SIGINT each recorder whose lead covers the `remaining` seconds of the window."""
        with self._lock:
            recorders = list(self._recorders.items())
        for pid, (proc, _out, _err) in recorders:
            if pid not in self._asked and remaining <= self.lead(self.rates[pid]):
                self._ask(pid, proc)

    def _ask(self, pid, proc):
        self._asked.add(pid)
        self._asked_at[pid] = self._clock()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)

    def request_stop(self):
        """Ask every recorder to finish; no new ones start (those not started yet get a
        snapshot at stop())."""
        self.usable = False
        self._closing = True
        for kind, starter in self._starters.items():
            self._pending[kind].put(None)
            starter.join()
        for pid, (proc, _out, _err) in self._recorders.items():
            if pid not in self._asked:
                self._ask(pid, proc)

    def stop(self, grace=None):
        """End sampling; return ({(pid, tid): {"name", "stacks"}}, frames) merged over processes."""
        self.request_stop()
        deadline = time.monotonic() + (self.STOP_GRACE_S if grace is None else grace)
        for pid, (proc, _out, _err) in self._recorders.items():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                self.late.append(pid)
        for proc, _out, _err in self._recorders.values():
            proc.wait()
        outputs, retry, deepen = {}, [], []
        for pid, (proc, outfile, errfile) in self._recorders.items():
            errfile.seek(0)
            stderr = errfile.read()
            errfile.close()
            raced = bool(READ_ERRORS.search(stderr))
            got, got_frames = {}, []
            if pid not in self.late:
                try:
                    with open(outfile) as f:
                        got, got_frames = parse_speedscope(json.load(f), pid)
                except FileNotFoundError:
                    pass
                except ValueError:
                    self.failures[pid] = ("error", "py-spy wrote unreadable output")
                    continue
            if got:
                outputs[pid] = (got, got_frames)
                self._check_thin(pid, got)
                rooted = [sum(_rooted(stack, got_frames) for stack in p["stacks"]) for p in got.values()]
                torn = any(0 < n < len(p["stacks"]) for n, p in zip(rooted, got.values()))
                if raced or torn:
                    self._racing.add(pid)
                    if max(rooted) < self.THIN_SAMPLES:
                        deepen.append(pid)   # too few whole stacks: dumps at the end add some
                continue
            if raced:
                self._racing.add(pid)
                deepen.append(pid)
            # Killed late, or stopped before its first sample (a short window on a busy
            # machine): one non-blocking snapshot still gives the stacks, unless py-spy
            # already said why it cannot.
            failure = explain_failure(stderr)
            # "gone" is read from py-spy's words ("No such file or directory" has other causes):
            # trust it only if the process really is gone.
            really_gone = failure[0] == "gone" and not procfs.exists(pid)
            if pid in self.late or failure[0] not in FINAL_FAILURES \
                    or failure[0] == "gone" and not really_gone:
                retry.append(pid)
            self.failures[pid] = failure
        retry.extend(self._unstarted)
        retry.extend(pid for pid in self.snapshots if pid not in self._snapped and pid not in retry
                     and self.failures.get(pid, ("error",))[0] not in FINAL_FAILURES)
        retry.extend(pid for pid in self._end_snapshots if pid not in retry)
        self._take_snapshots([pid for pid in retry if pid not in deepen])
        self._take_snapshots(deepen, tries=self.SNAPSHOT_TRIES)
        for pid in outputs:
            self.failures.pop(pid, None)   # its recorder gave stacks: a failed extra dump is no failure
        parts = {}   # pid -> [(time, threads, frames)], merged in time order
        for pid, (got, got_frames) in outputs.items():
            parts.setdefault(pid, []).append((self._recorded_at.get(pid, 0) - self.t0, got, got_frames))
        for pid, taken in self._snapped.items():
            parts.setdefault(pid, []).extend(taken)
        profiles, frames, frame_index = {}, [], {}
        for pid, taken in parts.items():
            for _at, got, got_frames in sorted(taken, key=lambda part: part[0]):
                got = self.match_thread_ids(pid, got)
                remap = [intern_row(frames, frame_index, f) for f in got_frames]
                for key, profile in got.items():
                    stacks = [[remap[i] for i in stack] for stack in profile["stacks"]]
                    if key in profiles:
                        profiles[key]["stacks"].extend(stacks)
                    else:
                        profiles[key] = dict(profile, stacks=stacks)
        if not self.native:   # native stacks end in native frames: their roots differ
            _drop_torn(profiles, frames, self._racing)
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        return profiles, frames


def _rooted(stack, frames):
    """A whole stack (leaf first): its outermost frame is a thread's root, not a frame a racing
    read stopped at."""
    try:
        return bool(stack) and frames[stack[-1]][0] in ROOT_FUNCTIONS
    except (IndexError, TypeError):
        return False


def _drop_torn(profiles, frames, racing):
    """In processes whose reads raced, a thread's samples with no root, beside whole ones of the
    same thread, were cut short: keep them as samples (the thread was there) with no frames, so
    that a few inner frames never stand for where the thread was."""
    for (pid, _tid), profile in profiles.items():
        if pid not in racing:
            continue
        stacks = profile["stacks"]
        rooted = [_rooted(stack, frames) for stack in stacks]
        if any(rooted) and not all(rooted):
            profile["stacks"] = [stack if whole else [] for stack, whole in zip(stacks, rooted)]


def explain_failure(stderr):
    for fragment, kind in PYSPY_FAILURES:
        if fragment in stderr:
            return kind, last_line(stderr, 300, skip=("py-spy>",))
    return "error", last_line(stderr, 300, skip=("py-spy>",)) or "py-spy recorded nothing"


def parse_speedscope(data, default_pid):
    """Speedscope JSON from py-spy -> per-thread ordered stacks.

    Returns (threads, frames): frames is a list of [function, file, line];
    threads maps (pid, tid) to {"name", "stacks": [[frame index, ...] leaf first]}.
    py-spy puts synthetic "process ..." and "thread ..." frames at the root
    of each stack; they are dropped.
    """
    shared = data["shared"]["frames"]
    keep = []
    frames = []
    remap = {}
    for index, frame in enumerate(shared):
        name = frame.get("name", "")
        if not frame.get("file") and (name.startswith("process ") or name.startswith("thread (")):
            continue
        remap[index] = len(frames)
        frames.append([name, frame.get("file") or "", frame.get("line") or 0])
        keep.append(index)
    threads = {}
    for profile in data["profiles"]:
        match = PROFILE_NAME.match(profile.get("name", ""))
        if not match:
            continue
        pid = int(match.group(1)) if match.group(1) else default_pid
        ident, name = match.group(2), match.group(3)
        tid = ident.lower() if ident.startswith("0x") else int(ident)
        stacks = []
        for sample in profile.get("samples", []):
            # speedscope stacks are root first; store leaf first like py-spy dump.
            stacks.append([remap[i] for i in reversed(sample) if i in remap])
        threads[(pid, tid)] = {"name": name, "stacks": stacks}
    return threads, frames


MAX_LOCAL_REPR = 120
LOCALS_FRAMES = 3
LOCALS_PROCESSES = 16


def dump_locals(pids):
    """Local variables of the innermost frames of every thread (only with --locals).

    One `py-spy dump --locals --nonblocking` per process.  Values are cut to
    MAX_LOCAL_REPR characters and redacted like command lines: a variable whose
    name looks secret is masked whatever its value.
    """
    from ..redact import MASK, _looks_secret, redact_text
    found = {}
    ids = ThreadIdMap()
    for pid in list(pids)[:LOCALS_PROCESSES]:
        for thread in pyspy_dump(pid, with_locals=True) or []:
            frames = []
            for frame in (thread.get("frames") or [])[:LOCALS_FRAMES]:
                values = {}
                for local in frame.get("locals") or []:
                    name = str(local.get("name"))
                    text = str(local.get("repr"))[:MAX_LOCAL_REPR]
                    values[name] = MASK if _looks_secret(name) else redact_text(text)
                frames.append({"function": frame.get("name"), "line": frame.get("line"), "locals": values})
            tid = dumped_tid(pid, thread, ids)
            if tid is not None:
                found[(pid, tid)] = frames
    return found


# --- the probe: which process gets what stacks ---------------------------------------------

# py-spy costs ~2 ms per sample of a 12-thread process (measured: ~600 process_vm_readv
# calls) and ~10 ms to attach, so stacks follow what a process does *now*, measured over
# its first DECIDE_AFTER_S of /proc samples: one using >= BUSY_CPU_SHARE of a core, or with a
# thread runnable (R) in >= BUSY_RUNNABLE_SHARE of its samples (wanting a CPU it does not get:
# throttled by a cgroup quota, or on an oversubscribed machine; its stack moves as a busy
# one's does, slowly), is recorded at the asked rate (within BUSY_STACK_SAMPLES_PER_S for the
# tree); an idle one
# gets one `py-spy dump` (its blocked threads have the same stack at every sample), again at
# the window's end if its threads moved, and a recorder if it turns busy later.
# No process goes unsampled.
BUSY_CPU_SHARE = 0.1
BUSY_RUNNABLE_SHARE = 0.25
RUNNABLE_MIN_SAMPLES = 4   # fewer say little: one R sample of two is a thread woken just then
BUSY_STACK_SAMPLES_PER_S = 24
DECIDE_AFTER_S = 0.4
ACTIVITY_CHECK_S = 1.0     # how often an idle process is checked for turning busy
MIN_RECORD_S = 1.0         # sampling a late recorder gets before it is asked to stop
IDLE_STACK_SAMPLES = 10    # --native and --duration 0 record every process: idle ones at 1 Hz
IDLE_STACK_RATE = 1
SNAPSHOT_RATE = 20         # --duration 0: py-spy samples for the half second it is given


def looks_like_python(pid, exe):
    """True/False from the executable and its mapped libraries; None if unknown."""
    if exe and os.path.basename(exe).startswith("python"):
        return True
    try:
        return "libpython" in procfs.read(pid, "maps")
    except procfs.ProcfsError:
        return None if not exe else False


@typed_record
class StacksSection(Section):
    """Python stacks of every thread, merged over py-spy's recorders and dumps, and how each
    process was sampled."""
    profiles: Dict[Tuple[int, int], dict] = field(default_factory=dict)   # (pid, tid) -> {"name", "stacks"}
    frames: List[list] = field(default_factory=list)                      # [function, file, line, source]
    python: Dict[Tuple[int, int], dict] = field(default_factory=dict)     # (pid, start time) -> python status
    rates: Dict[int, int] = field(default_factory=dict)                   # pid -> Hz it was recorded at
    snapshots: Dict[int, List[float]] = field(default_factory=dict)       # pid -> seconds of its dumps
    thread_ids: Dict[int, str] = field(default_factory=dict)              # pid -> how its ids were matched
    unmatched: Dict[int, list] = field(default_factory=dict)              # pid -> [(pthread id, name, why)]
    local_values: Dict[Tuple[int, int], list] = field(default_factory=dict)
    target_failure: Optional[tuple] = None    # why py-spy could not read the target, if it could not
    rate_hz: Optional[int] = None

    def write(self, capture):
        """Each process's "python" and its threads' "stack_samples"; "frames" and "stacks"."""
        stack_table, stack_index = [], {}
        processes = capture["processes"]
        latest = {proc["pid"]: index for index, proc in enumerate(processes)}
        for index, proc in enumerate(processes):
            pid = proc["pid"]
            if latest[pid] == index:
                by_tid = {t["tid"]: t for t in proc["threads"]}
                for (ppid, tid), profile in self.profiles.items():
                    if ppid != pid:
                        continue
                    thread = by_tid.get(tid)
                    if thread is None:
                        thread = {"tid": tid, "name": profile["name"], "samples": [], "cpu_seconds": None,
                                  "first_seen": None, "last_seen": None}
                        proc["threads"].append(thread)
                        by_tid[tid] = thread
                    thread["python_name"] = profile["name"]
                    if (pid, tid) in self.local_values:
                        thread["locals"] = self.local_values[(pid, tid)]
                    thread["stack_samples"] = _run_length(
                        [intern_row(stack_table, stack_index, _bounded_stack(s, self.frames))
                         for s in profile["stacks"]])
            python = proc["python"] = dict(self.python.get((pid, proc["start_time"])) or NO_STACKS)
            if python["stacks"]:
                python["thread_ids"] = self.thread_ids.get(pid) or "kernel tids reported by py-spy"
                lost = self.unmatched.get(pid)
                if lost:
                    python["unmatched_threads"] = [{"pthread_id": p, "name": n, "reason": why} for p, n, why in lost]
            if self.rates.get(pid):
                python["stack_rate_hz"] = self.rates[pid]            # what py-spy sampled it at
            if self.snapshots.get(pid):
                python["stack_snapshots"] = self.snapshots[pid]      # seconds into the window
        capture["frames"] = self.frames
        capture["stacks"] = stack_table
        target = next((p for p in processes if p["pid"] == capture["request"].get("pid")), None)
        if target is not None and self.target_failure and self.target_failure[0] == "permission":
            capture["permission_denied"] = True


NO_STACKS = {"stacks": False, "reason": "no Python stacks sampled"}
MAX_STACK_DEPTH = 512    # deeper stacks keep their innermost and outermost frames
ELIDED_FRAME = ["...", "", 0]


def _bounded_stack(stack, frames):
    """Keep the innermost 400 and outermost 100 frames of very deep (recursive) stacks."""
    if len(stack) <= MAX_STACK_DEPTH:
        return stack
    if ELIDED_FRAME not in frames:
        frames.append(list(ELIDED_FRAME))
    return stack[:400] + [frames.index(ELIDED_FRAME)] + stack[-100:]


def _run_length(ids):
    runs = []
    for sid in ids:
        if runs and runs[-1][0] == sid:
            runs[-1][1] += 1
        else:
            runs.append([sid, 1])
    return runs


class StacksProbe(Probe):
    """Python stacks of every Python process over the window: a py-spy recorder for each busy
    one, one or two dumps of each idle one (see BUSY_CPU_SHARE), never pausing the target
    unless --native."""

    name = "stacks"
    Section = StacksSection

    def __init__(self):
        self.pyspy = None
        self._busy_stack_rate = None
        self._by_activity = False
        self._snapshot_signatures = {}   # pid -> _signature when its snapshot was asked for
        self._activity_marks = {}        # pid -> (t, CPU ticks) at its last activity check
        self._not_python = set()

    def start(self, ctx):
        config = ctx.config
        self.pyspy = pyspy = PySpy(rate=config.stack_rate if config.duration else SNAPSHOT_RATE,
                                   duration=max(config.duration, 1), native=config.native)
        pyspy.t0 = ctx.t0
        self._busy_stack_rate = config.stack_rate
        # a snapshot (--duration 0) and --native record every process from the start, at a rate
        # set by its CPU since it started; otherwise _choose decides by what it does now
        self._by_activity = bool(config.duration) and not config.native
        if pyspy.start() and not self._by_activity:
            records = ctx.sampler.records
            busy = sum(1 for record in records.values() if _cpu_share(record) >= BUSY_CPU_SHARE)
            if busy * pyspy.rate > BUSY_STACK_SAMPLES_PER_S:
                self._busy_stack_rate = max(IDLE_STACK_RATE, BUSY_STACK_SAMPLES_PER_S // busy)
            for record in list(records.values()):
                self.watched(ctx, record)

    def tick(self, ctx):
        pyspy, duration = self.pyspy, ctx.config.duration
        if duration and pyspy.usable:
            pyspy.stop_due(duration - ctx.now())
        if ctx.t is not None and pyspy.usable and self._by_activity:
            self._choose(ctx.sampler, ctx.now(), duration)

    def watched(self, ctx, record):
        if self.pyspy is None or self._by_activity:
            return   # not started yet (start() takes every record), or decided by _choose
        if record.exited_at is None and _python(record):
            rate = self.pyspy.rate
            duration = ctx.config.duration
            if duration:   # a --duration 0 snapshot samples everything at full rate
                busy = _cpu_share(record) >= BUSY_CPU_SHARE
                idle_rate = max(IDLE_STACK_RATE, math.ceil(IDLE_STACK_SAMPLES / duration))
                rate = min(rate, self._busy_stack_rate if busy else idle_rate)
            self.pyspy.add(record.pid, rate)

    def stop(self, ctx):
        pyspy, sampler, config = self.pyspy, ctx.sampler, ctx.config
        if pyspy is None:
            return self.failed("not started")
        if self._by_activity:
            pyspy.snapshot_at_end([pid for pid in pyspy.snapshots if pid not in pyspy.rates
                                   and self._moved_since_snapshot(sampler, pid)])
        # py-spy's grace counts from the window's end: the thread sampler's finish() overlaps it
        past_end = max(0.0, ctx.now() - config.duration) if config.duration else 0.0
        profiles, frames = pyspy.stop(grace=max(0.0, pyspy.STOP_GRACE_S - past_end))
        local_values = dump_locals(sorted({pid for pid, _tid in profiles})) if config.locals else {}
        sources.annotate(frames, _frame_owner(profiles))
        limitations = [pyspy.limitation] if pyspy.limitation else []
        limitations += self._sampling_notes(config.rate)
        records = sorted(sampler.records.values(), key=lambda record: record.first_seen)
        seen = {pid for pid, _tid in profiles}
        return StacksSection(
            limitations=limitations + _process_notes(pyspy, records, seen, config.pid),
            profiles=profiles, frames=frames, rates=pyspy.rates, snapshots=pyspy.snapshots,
            python={(r.pid, r.start_time): _python_status(r, r.pid in seen, pyspy.failures.get(r.pid))
                    for r in records},
            thread_ids=pyspy.thread_ids.method, unmatched=pyspy.unmatched, local_values=local_values,
            target_failure=pyspy.failures.get(config.pid), rate_hz=pyspy.rate)

    def _sampling_notes(self, proc_rate):
        """Limitations that say how stacks were sampled where that was not the asked rate."""
        pyspy, notes = self.pyspy, []
        recorded = pyspy.rates
        snapped = {pid: times for pid, times in pyspy.snapshots.items() if pid not in recorded and times}
        if snapped:
            again = sum(1 for times in snapped.values() if len(times) > 1)
            notes.append(
                "Python stacks of %d idle process%s (under %d%% of a core when sampled) come from one py-spy "
                "snapshot each%s; their blocked threads sit in the calls /proc samples at %s Hz (each "
                "process's stack sampling is in the JSON report)"
                % (len(snapped), "" if len(snapped) == 1 else "es", round(BUSY_CPU_SHARE * 100),
                   ", %d taken again at the window's end (their threads moved)" % again if again else "",
                   proc_rate))
        lowered = sorted(pid for pid, hz in recorded.items() if hz < pyspy.rate)
        if lowered:
            by_rate = {}
            for pid in lowered:
                by_rate.setdefault(recorded[pid], []).append(pid)
            notes.append(
                "Python stack rate (asked for %d Hz) lowered for %d of %d recorded processes: %s (each "
                "process's rate is in the JSON report)"
                % (pyspy.rate, len(lowered), len(recorded),
                   ", ".join("%d at %d Hz" % (len(p), hz) for hz, p in sorted(by_rate.items()))))
        if pyspy.late:
            notes.append("Python stacks of %d processes from one snapshot: their py-spy did not stop "
                         "within %.1f s of the window's end (pids %s)"
                         % (len(pyspy.late), pyspy.STOP_GRACE_S, ", ".join(map(str, pyspy.late[:5]))))
        for pid, taken, span, started in pyspy.thin:
            notes.append("py-spy took only %d stack sample%s of pid %d in %.1f s at %d Hz, recording from "
                         "%.1f s into the window (started late, starved of CPU, or failing to read the "
                         "process): its Python stacks say less"
                         % (taken, "" if taken == 1 else "s", pid, span, pyspy.rates[pid], started))
        return notes

    def failed(self, error):
        return StacksSection(limitations=["Python stacks: not measured (the probe failed: %s)" % error])

    # --- which process gets what ----------------------------------------------------------

    def _choose(self, sampler, now, duration):
        """Record the stacks of processes busy now, snapshot the idle ones, and start a
        recorder for an idle one that turns busy (see BUSY_CPU_SHARE)."""
        pyspy = self.pyspy
        decide_after = min(DECIDE_AFTER_S, duration / 10.0)
        newly, busy = [], []
        for key in list(sampler.live.values()):
            record = sampler.records[key]
            if record.pid in pyspy.rates or record.exited_at is not None:
                continue
            if record.pid in pyspy.snapshots:
                mark = self._activity_marks.get(record.pid)
                if mark and record.last_seen - mark[0] >= ACTIVITY_CHECK_S:
                    turned_busy = _busy_since(record, mark)
                    self._activity_marks[record.pid] = (record.last_seen, _cpu_ticks(record.stat_last))
                    rate = self._busy_rate(1)
                    if turned_busy and duration - now >= pyspy.lead(rate) + MIN_RECORD_S:
                        pyspy.add(record.pid, rate)
                continue
            if record.last_seen - record.first_seen >= decide_after and record.pid not in self._not_python:
                if not _python(record):
                    self._not_python.add(record.pid)   # a compiler, a shell: no Python stacks to take
                    continue
                if _busy_since(record, (record.first_seen, _cpu_ticks(record.stat_first))):
                    busy.append(record)
                elif _looks(record) < RUNNABLE_MIN_SAMPLES and _caught_runnable(record):
                    continue   # ticks come at random intervals: look again before calling it idle
                newly.append(record)
        rate = self._busy_rate(len(busy))
        for record in newly:
            if record in busy:
                pyspy.add(record.pid, rate)
            else:
                self._snapshot_signatures[record.pid] = _signature(record)
                self._activity_marks[record.pid] = (record.last_seen, _cpu_ticks(record.stat_last))
                pyspy.snapshot(record.pid)

    def _busy_rate(self, count):
        """Stack rate for `count` more busy processes: the asked rate, within the tree's budget."""
        left = BUSY_STACK_SAMPLES_PER_S - sum(self.pyspy.rates.values())
        return max(1, min(self.pyspy.rate, left // max(count, 1)))

    def _moved_since_snapshot(self, sampler, pid):
        """Did a thread of this snapshotted process end the window somewhere else (another
        call or wait, running, or a thread the snapshot did not see)?"""
        key = sampler.live.get(pid)
        before = self._snapshot_signatures.get(pid)
        if key is None or before is None:
            return False
        now = _signature(sampler.records[key])
        return any(tid not in before or sig != before[tid] or sig[0] == "running" for tid, sig in now.items())


def _process_notes(pyspy, records, seen, target_pid):
    """Limitations about particular processes: threads whose ids could not be matched, py-spy
    denied or failing."""
    from ..permissions import how_to_get_access
    notes = []
    for record in records:
        lost = pyspy.unmatched.get(record.pid) if record.pid in seen else None
        if lost:
            notes.append("pid %d: Python stacks of %d thread(s) could not be tied to a kernel thread (%s: %s)"
                         % (record.pid, len(lost), ", ".join("%s '%s'" % (p, n) for p, n, _w in lost[:4]), lost[0][2]))
    failures = pyspy.failures
    denied = [pid for pid, failure in failures.items() if failure[0] == "permission"]
    if denied:
        root_uid = next((r.static.get("uid") for r in records if r.pid == target_pid), None)
        notes.append("py-spy was denied access to pid %s: no Python stacks (%s). To get them: %s"
                     % (", ".join(map(str, denied[:5])), failures[denied[0]][1], how_to_get_access(root_uid)))
    for pid, failure in sorted(failures.items())[:5]:
        if failure[0] == "error":
            notes.append("py-spy failed on pid %d: %s" % (pid, failure[1]))
    return notes


def _python_status(record, has_stacks, stack_failure):
    if has_stacks:
        return {"stacks": True, "reason": None}
    if looks_like_python(record.pid, record.static.get("exe")) is False:
        return {"stacks": False, "reason": "not a Python process"}
    if stack_failure:
        return {"stacks": False, "reason": "py-spy: %s" % (stack_failure[1] or stack_failure[0])}
    if record.exited_at is not None and record.exited_at - record.first_seen < 1.0:
        return {"stacks": False, "reason": "exited before py-spy could sample it"}
    return dict(NO_STACKS)


def _frame_owner(profiles):
    """frame index -> a pid whose filesystem view holds that frame's file."""
    owner = {}
    for (pid, _tid), profile in profiles.items():
        for stack in profile["stacks"]:
            for index in stack:
                owner.setdefault(index, pid)
    return owner.get


def _python(record):
    return looks_like_python(record.pid, record.static.get("exe")) is not False


def _cpu_ticks(stat):
    return (stat["utime"] + stat["stime"]) if stat else 0


def _recent_share(record, mark):
    """Cores the process used since mark = (t, CPU ticks), from its /proc stat."""
    span = record.last_seen - mark[0]
    if span <= 0 or not record.stat_last:
        return 0.0
    return (_cpu_ticks(record.stat_last) - mark[1]) / procfs.CLK_TCK / span


def _busy_since(record, mark):
    """Busy since mark = (t, CPU ticks): it used BUSY_CPU_SHARE of a core, or one of its threads
    was runnable in BUSY_RUNNABLE_SHARE of its samples (see BUSY_RUNNABLE_SHARE)."""
    return _recent_share(record, mark) >= BUSY_CPU_SHARE or _runnable_share(record, mark[0]) >= BUSY_RUNNABLE_SHARE


def _runnable_share(record, since):
    """The largest share of samples since `since` in which one thread was runnable (R), over
    threads with RUNNABLE_MIN_SAMPLES samples or more."""
    best = 0.0
    for thread in record.threads.values():
        runnable = total = 0
        for sample in reversed(thread.samples):   # newest first: only the samples since the mark
            if sample[0] < since:
                break
            total += 1
            runnable += sample[1] == "R"
        if total >= RUNNABLE_MIN_SAMPLES:
            best = max(best, runnable / total)
    return best


def _looks(record):
    """How many /proc samples the process's threads have had (its oldest thread's count)."""
    return max((len(thread.samples) for thread in record.threads.values()), default=0)


def _caught_runnable(record):
    return any(sample[1] == "R" for thread in record.threads.values() for sample in thread.samples)


def _signature(record):
    """{tid: (syscall or "running", wait detail)} of the threads seen at the last tick (a sleep's
    detail is its time left, different at every look: the call alone says where it is)."""
    return {tid: (thread.samples[-1][2], None if thread.samples[-1][2] in NANOSLEEPS else thread.samples[-1][3])
            for tid, thread in record.threads.items() if thread.samples and thread.last_seen == record.last_seen}


def _cpu_share(record):
    """CPU the process used since it started, in cores (0.5 = half a core on average)."""
    stat = record.stat_first
    try:
        uptime = procfs.uptime()
    except (procfs.ProcfsError, ValueError, IndexError):
        return 0.0
    if not stat:
        return 0.0
    age = max(0.5, uptime - stat["start_time"] / procfs.CLK_TCK)
    return (stat["utime"] + stat["stime"]) / procfs.CLK_TCK / age
