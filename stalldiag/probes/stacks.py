"""Python stacks of every thread, sampled over the window by `py-spy record`.

py-spy runs as a subprocess in --nonblocking mode: it reads the target's
memory with process_vm_readv and never pauses it.  One long-running
`py-spy record` per root (with --subprocesses under --children) costs one
attach instead of one per sample: a `py-spy dump` costs ~65 ms of CPU each.
Output is speedscope JSON, which keeps every thread's samples in order.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from ..helpers import die_with_parent, intern_row
from .thread_ids import ThreadIdMap

# "Process 12 Thread 34 "name"" with --subprocesses, "Thread 34 "name"" without.  Where
# py-spy knows no kernel tid (Python < 3.11 in --nonblocking mode) it names the pthread
# id in hex, "Thread 0x7F147A5BD6C0 "name"", which thread_ids.py maps to a tid.
PROFILE_NAME = re.compile(r'^(?:Process (\d+) )?Thread (0x[0-9A-Fa-f]+|\d+)(?: "(.*)")?$', re.S)
MIN_PYSPY = (0, 3, 10)

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


def pyspy_version(binary):
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in match.groups()) if match else None


class StackProbe:
    """Drives one `py-spy record` per Python process over the window and merges what they wrote.

    One py-spy per process rather than `--subprocesses`: that mode rescans the
    whole process table continuously and cost ~0.4 s of CPU per 10 s for an
    8-process tree, against ~0.02 s for each per-process recorder.
    """

    MAX_PROCESSES = 32   # beyond this, later processes get /proc data only (named in the report)

    def __init__(self, rate, duration, native=False):
        self.rate = max(1, int(round(rate)))
        self.duration = duration
        self.native = native
        self.binary = find_pyspy()
        self.limitation = None
        self.failures = {}      # pid -> (kind, message)
        self.skipped = []       # pids not sampled because of MAX_PROCESSES
        self._recorders = {}    # pid -> (Popen, outfile, errfile)
        self._tmpdir = None
        self.usable = False
        self.thread_ids = ThreadIdMap()
        self.unmatched = {}     # pid -> [(pthread id, thread name, why)]

    def start(self):
        if self.binary is None:
            self.limitation = "py-spy not found: no Python stacks (pip install py-spy, or set STALLDIAG_PYSPY)"
            return False
        version = pyspy_version(self.binary)
        if version is not None and version < MIN_PYSPY:
            self.limitation = "py-spy %s is older than %s: no Python stacks" % (
                ".".join(map(str, version)), ".".join(map(str, MIN_PYSPY)))
            return False
        self._tmpdir = tempfile.mkdtemp(prefix="stalldiag-")
        self.usable = True
        return True

    def add(self, pid):
        """Start sampling one more process (a no-op if it is already sampled)."""
        if not self.usable or pid in self._recorders or pid in self.skipped:
            return
        if len(self._recorders) >= self.MAX_PROCESSES:
            self.skipped.append(pid)
            return
        outfile = os.path.join(self._tmpdir, "stacks-%d.json" % pid)
        errfile = open(os.path.join(self._tmpdir, "stderr-%d.txt" % pid), "w+")
        # A long --duration: we stop py-spy ourselves with SIGINT at the end of
        # the window (it then writes what it has), so its own timer never cuts
        # sampling short when its start-up took a while.
        cmd = [self.binary, "record", "--pid", str(pid), "--format", "speedscope",
               "--threads", "--idle", "--rate", str(self.rate),
               "--duration", str(int(self.duration) + 60), "-o", outfile]
        cmd.append("--native" if self.native else "--nonblocking")  # native unwinding pauses the target
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errfile,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=die_with_parent)
        except OSError as exc:
            errfile.close()
            self.failures[pid] = ("error", "py-spy could not start: %s" % exc)
            return
        self._recorders[pid] = (proc, outfile, errfile)

    def _snapshot(self, pid):
        """One `py-spy dump --json --nonblocking` of pid, in parse_speedscope's shape."""
        try:
            out = subprocess.run([self.binary, "dump", "--pid", str(pid), "--json", "--nonblocking"],
                                 capture_output=True, text=True, timeout=20, preexec_fn=die_with_parent)
            threads = json.loads(out.stdout) if out.returncode == 0 else []
        except (OSError, subprocess.SubprocessError, ValueError):
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

    def request_stop(self):
        """Ask every recorder to finish.  py-spy notices SIGINT only at its next sample, up to
        1.6 sample periods later, so the session asks one period before the window ends."""
        self.usable = False
        for proc, _out, _err in self._recorders.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    def stop(self, timeout=5.0):
        """End sampling; return ({(pid, tid): {"name", "stacks"}}, frames) merged over processes."""
        self.request_stop()
        deadline = time.monotonic() + timeout
        profiles, frames, frame_index = {}, [], {}
        for pid, (proc, outfile, errfile) in self._recorders.items():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            errfile.seek(0)
            stderr = errfile.read()
            errfile.close()
            try:
                with open(outfile) as f:
                    got, got_frames = parse_speedscope(json.load(f), pid)
            except FileNotFoundError:
                got, got_frames = {}, []
            except ValueError:
                self.failures[pid] = ("error", "py-spy wrote unreadable output")
                continue
            if not got:
                # A recorder stopped before its first sample (a short window on a busy
                # machine): one non-blocking snapshot still gives the stacks, unless
                # py-spy already said why it cannot.
                failure = explain_failure(stderr)
                if failure[0] not in ("not-python", "unsupported-python", "permission", "gone"):
                    got, got_frames = self._snapshot(pid)
                if not got:
                    self.failures[pid] = failure
                    continue
            got = self.match_thread_ids(pid, got)
            remap = [intern_row(frames, frame_index, f) for f in got_frames]
            for key, profile in got.items():
                profile["stacks"] = [[remap[i] for i in stack] for stack in profile["stacks"]]
                profiles[key] = profile
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        return profiles, frames


def explain_failure(stderr):
    for fragment, kind in PYSPY_FAILURES:
        if fragment in stderr:
            return kind, _last_error_line(stderr)
    return "error", _last_error_line(stderr) or "py-spy recorded nothing"


def _last_error_line(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.strip() and not l.startswith("py-spy>")]
    return lines[-1][:300] if lines else ""


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
    binary = find_pyspy()
    found = {}
    ids = ThreadIdMap()
    if binary is None:
        return found
    for pid in list(pids)[:LOCALS_PROCESSES]:
        try:
            out = subprocess.run([binary, "dump", "--pid", str(pid), "--locals", "--json", "--nonblocking"],
                                 capture_output=True, text=True, timeout=20).stdout
            threads = json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError):
            continue
        for thread in threads:
            frames = []
            for frame in (thread.get("frames") or [])[:LOCALS_FRAMES]:
                values = {}
                for local in frame.get("locals") or []:
                    name = str(local.get("name"))
                    text = str(local.get("repr"))[:MAX_LOCAL_REPR]
                    values[name] = MASK if _looks_secret(name) else redact_text(text)
                frames.append({"function": frame.get("name"), "line": frame.get("line"), "locals": values})
            tid = thread.get("os_thread_id")
            if tid is None and thread.get("thread_id"):
                tid = ids.resolve(pid, [thread["thread_id"]])[0].get(thread["thread_id"])
            if tid is not None:
                found[(pid, tid)] = frames
    return found
