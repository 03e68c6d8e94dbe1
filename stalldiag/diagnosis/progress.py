"""The one progress model: is a thread stuck, is the run making progress, is it merely silent?

Three levels share these thresholds and predicates:
  thread    stuck(view): in one wait for the whole window and not computing; every claim
            that nothing moves (a deadlock, an orphaned wait, a lost task) rests on it
  window    assess(): the run moves when it does work (CPU in its own code, GPU compute,
            input advancing, files growing) and nothing it needs is halted, deadlocked or
            only retrying a failing call (blockers())
  interval  interval_progress(): what `stalldiag watch` asks between two light checks

The commonest false alarm is a healthy run that prints nothing: print() into a
file is block-buffered, progress bars draw nothing without a TTY, logging.info
goes nowhere without a handler.  Progress is judged from what the run does,
not from what it prints.
"""
import os
import re
from collections import Counter
from dataclasses import field
from typing import List

from ..records import typed_record
from .motion import (STUCK_SHARE, _by_fd, _in_one_function, _silent, _user_line, file_changes, frozen_stack,  # noqa: F401
                     in_one_function, runaway, spins, streams_in, stuck)
from .types import Process
from .views import writes_pipe
from .text import clip_items
from ..vocab import Condition, Kind, ProgressState, RoleKind

# Least CPU use, as a share of one core over the span, that counts as work.
CPU_WORK = 0.2
GPU_WORK = 5.0   # % NVML utilization
STORAGE_WORK_BYTES = 256 * 1024   # bytes read from or written to a device in the window that count as work
THROTTLED_WORK = 0.05   # a thread held to a small CPU quota still moves, slowly
STARVED_CPU = 0.05  # a training loop under this share of a core over the window did not run
# Between two watch checks: CPU seconds that count as work (only when the stacks moved too)
INTERVAL_CPU_S = 0.05
REPEATED_LINES = 4     # kept lines of a stream, all one or two messages again, that are a loop's report
# a line's leading time stamp and level, which change from one report of the same wait to the next
STAMP = re.compile(r"^\W*(\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d([.,]\d+)?\W*|^\W*\d{9,10}(\.\d+)?\W*")


def starved(view, duration):
    """A thread that barely ran in the window: stuck, or under STARVED_CPU of a core."""
    return stuck(view) or (view.cpu_seconds is not None and view.cpu_seconds < STARVED_CPU * (duration or 0))


@typed_record(frozen=True)
class Progress:
    """Whether the run is making progress: "making progress", "no progress seen" or "cannot tell",
    the evidence, and that evidence as one line."""
    state: str
    evidence: List[str] = field(default_factory=list)
    brief: str = ""

    def as_dict(self):
        return {"state": self.state, "evidence": list(self.evidence), "brief": self.brief}


def interval_progress(io_bytes, output_bytes, gpu_util, cpu_s, stacks_moved):
    """(progress?, why) between two light checks of `stalldiag watch`.  gpu_util and
    stacks_moved are called only when needed (NVML, a py-spy dump): CPU with frozen stacks is
    a spin, not work."""
    if io_bytes > 0:
        return True, "%d bytes read/written" % io_bytes
    if output_bytes > 0:
        return True, "output grew by %d bytes" % output_bytes
    gpu = gpu_util()
    if gpu is not None and gpu >= GPU_WORK:
        return True, "GPU %d%% busy" % gpu
    if cpu_s >= INTERVAL_CPU_S:
        if stacks_moved():
            return True, "%.2f s CPU and the stacks moved" % cpu_s
        return False, "%.2f s CPU but the stacks did not move" % cpu_s
    return False, "no CPU, I/O, output or GPU activity"


def stdio_changes(proc, window_end_wall):
    """What fd 1 and 2 point at, bytes they received, and how long a file target has been unchanged.
    proc: a types.Process or a capture's process dict."""
    proc = Process.of(proc)
    start, end = _by_fd(proc.files_start), _by_fd(proc.files_end)
    out = {}
    for fd in (1, 2):
        after = end.get(fd) or start.get(fd)
        if not after:
            continue
        before = start.get(fd) or {}
        info = {"target": after.get("target"), "kind": after.get("kind")}
        if after.get("size") is not None and before.get("size") is not None:
            info["bytes"] = after["size"] - before["size"]
        if after.get("mtime") is not None and window_end_wall:
            info["unchanged_s"] = round(max(0.0, window_end_wall - after["mtime"]), 1)
        out[fd] = info
    return out


def repeats(lines):
    """The message a stream's kept lines say again and again, apart from their time stamps (a loop
    reporting one wait: "Lock not acquired, waiting 0.05 seconds"), or None.  A job that advances
    says something new (a step, a count, a file name)."""
    said = [STAMP.sub("", line).strip() for line in lines if line.strip()]
    if len(said) < REPEATED_LINES or len(set(said)) > 2 or len(said) < 2 * len(set(said)):
        return None
    return said[-1]


def _stdio_pipe(proc):
    """("stdout" or "stderr", its pipe) when the process's fd 1 or 2 is a pipe at the window's end."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        entry = next((f for f in proc.files_end or [] if f.get("fd") == fd), None)
        if entry and entry.get("kind") == "pipe":
            return name, entry.get("target")
    return None


def _blocked_writing(view):
    """A thread blocked writing a pipe for half the window or more."""
    return writes_pipe(view) and view.share >= 0.5


TRACEBACK_LINE = re.compile(r"^\s+(File \"|\S)|^Traceback \(most recent call last\)")


def only_failures(lines, grew):
    """The last line, when every line the stream grew by in the window (the last `grew` bytes of
    its kept lines) reports a failure or a retry ("WARNING: Retrying (Retry(total=3 ...)) after
    connection broken by 'ReadTimeoutError'", a traceback): a loop saying it failed again is not
    progress, however new each line's counter.  Else None."""
    from ..knowledge.retries import ERROR_LINE
    new, size = [], 0
    for line in reversed(lines or []):
        if size >= grew:
            break
        size += len(line) + 1
        if line.strip():
            new.append(line)
    if not new or size < grew * 0.8:
        return None      # (the kept lines do not cover what was written)
    if all(ERROR_LINE.search(line) or TRACEBACK_LINE.match(line) for line in new) and \
            any(ERROR_LINE.search(line) for line in new):
        return new[0].strip()
    return None


def _repeated_stream(output, proc, target, grew=0):
    """The message repeated in the stream of a process (stdout, stderr, a log) written at target,
    or the failure it only reports again."""
    tail = (output or {}).get(proc.pid)
    for stream in tail.streams() if tail is not None else []:
        if stream.path == target:
            return repeats(stream.lines) or (only_failures(stream.lines, grew) if grew else None)
    return None


def assess(window, procs, views, gpus, halted=(), output=None):
    """{"state": "making progress" | "no progress seen", "evidence": [...]}, of a types.Window and
    the types.Process records.

    halted: sentences for processes the job needs that are stopped or frozen
    (a rank, a process on the wait chain): with one of them the job makes no
    progress, whatever the others' CPUs do.  CPU time of a thread that
    spin-waits is not work either.  output: pid -> types.OutputTail; a stream
    that grows by one message said again (a wait reported in a loop) is no
    sign of progress, nor of its absence.
    """
    duration = window.duration_s or 0
    evidence = list(halted)
    signs = []             # the evidence that the run advances: said first when it does

    def sign(text):
        signs.append(text)
        evidence.append(text)
    progress = False
    procs_by_pid = {proc.pid: proc for proc in procs}
    storage_pids = {v.pid for v in views if v.kind == Kind.IO}
    shared_writes = {}
    recent_writes = {}     # path -> [size, pids]: a file changed in a directory several processes write to
    repeating = []         # streams that grew only by a message said again
    piped = []             # processes that wrote to a stdout or stderr that is a pipe
    for proc in procs:
        label = "pid %d" % proc.pid
        read, written, opened = file_changes(proc)
        for w in list(written):
            message = _repeated_stream(output, proc, w["target"], w["delta"])
            if message is not None:
                written.remove(w)
                repeating.append(proc.pid)
                evidence.append("%s wrote %s (+%d bytes), only a wait or a failure reported again: \"%s\"; a loop reporting "
                                "what it waits for, not a sign of progress" % (label, w["target"], w["delta"],
                                                                             clip_items([message], 120)))
        if written:
            progress = True
            for w in written:
                # A log file every worker writes to is one piece of evidence, not one per process.
                entry = shared_writes.setdefault(w["target"], [0, []])
                entry[0] = max(entry[0], w["delta"])
                if proc.pid not in entry[1]:   # (stdout and stderr into one file: one writer)
                    entry[1].append(proc.pid)
        if read:
            progress = True
            sign("%s read on in %s" % (label, ", ".join(
                "%s (+%d bytes, now at %s)" % (r["target"], r["delta"], _at(r)) for r in read[:4])))
        io = proc.io
        # A file changed in a directory it writes to (a checkpoint renamed into place) counts only
        # if this process wrote at least that many bytes in the window: another process may have
        # changed it, and writes to sockets and pipes alone do not make a file.
        recent = [f for f in proc.recent_files
                  if f["path"] not in {w.get("target") for w in written}
                  and io.get("wchar", 0) >= max(1, f.get("size") or 0)]
        for f in recent:
            progress = True
            entry = recent_writes.setdefault(f["path"], [f["size"], []])
            entry[1].append(proc.pid)
        kernel = proc.kernel
        majflt = (kernel.get("faults") or {}).get("majflt") or 0
        if majflt and io.get("read_bytes", 0) and kernel.get("data_mappings"):
            # Memory-mapped data advances through page faults: no read(), no file offset.
            progress = True
            sign("%s read %.1f MB from storage through %d page faults on %s" % (
                label, io["read_bytes"] / 1e6, majflt, kernel["data_mappings"][0]["path"]))
        if opened:
            evidence.append("%s opened %d file(s) during the window (%s)" % (
                label, len(opened), ", ".join(os.path.basename(o["target"] or "?") for o in opened[:4])))
        if duration and io.get("wchar", 0) > 0 and not written and not recent:
            piped_to = _stdio_pipe(proc)
            if piped_to and not any(_blocked_writing(v) for v in views if v.pid == proc.pid):
                # its stdout or stderr is a pipe (`python train.py | tee log`, a launcher reading
                # its lines): what it wrote there no probe can read, and may be its progress
                piped.append(proc.pid)
                evidence.append("%s wrote %d bytes in %d write calls, its %s a pipe (%s) whose lines no probe "
                                "can read: output that may be its progress" % (
                                    label, io["wchar"], io.get("syscw", 0), piped_to[0], piped_to[1]))
            else:
                evidence.append("%s wrote %d bytes in %d write calls" % (label, io["wchar"], io.get("syscw", 0)))
        if duration and any(streams_in(v, proc) for v in views if v.pid == proc.pid):
            # a thread of it waits to read a pipe and the reads go through, call after call
            progress = True
            sign("%s read %d bytes in %d read calls while waiting on a pipe" % (label, io["rchar"], io["syscr"]))
        elif duration and proc.pid in storage_pids and not read and not written \
                and io.get("rchar", 0) >= STORAGE_WORK_BYTES and io.get("syscr", 0) >= 2:
            # a thread of it waits on a file in read() and the reads go through, one after another
            # (a FIFO or a slow mount, where no offset moves): its data advances, slowly
            progress = True
            sign("%s read %d bytes in %d read calls while waiting on storage" % (label, io["rchar"], io["syscr"]))
        if duration and io.get("read_bytes", 0) + io.get("write_bytes", 0) > 0:
            # bytes the kernel moved to or from a device for a process whose thread waits on storage:
            # its data moves, however slowly (a process that only pages in its libraries does not
            # count: a compile stuck in a recursion reads 9 MB/s of .so pages)
            if io.get("read_bytes", 0) + io.get("write_bytes", 0) >= STORAGE_WORK_BYTES and proc.pid in storage_pids:
                progress = True
            evidence.append("%s storage: %.1f MB/s read, %.1f MB/s written" % (
                label, io.get("read_bytes", 0) / duration / 1e6, io.get("write_bytes", 0) / duration / 1e6))
    for target, (delta, pids) in sorted(shared_writes.items(), key=lambda kv: -kv[1][0])[:4]:
        who = "pid %d" % pids[0] if len(pids) == 1 else "%d processes (pids %s)" % (
            len(pids), ", ".join(map(str, pids[:4])) + (", ..." if len(pids) > 4 else ""))
        sign("%s wrote %s (+%d bytes)" % (who, target, delta))
    for path, (size, pids) in sorted(recent_writes.items())[:4]:
        sign("%s written during the window (%d bytes), in a directory %s writes to" % (
            path, size, "pid %d" % pids[0] if len(pids) == 1 else "each of pids %s" % ", ".join(map(str, pids[:4]))))
    # a thread in lockstep with another (caught waiting in most samples) computes as much as the
    # scheduler says it ran
    busy = [v for v in views if v.cpu_seconds and duration
            and (v.kind in (Kind.CPU, Kind.COMPILE, Kind.DATALOADER) or v.state is not None and v.state.condition == Condition.COMPUTING)
            and v.user_frame() and (v.state is None or v.state.progressing)
            and v.cpu_seconds / duration >= (THROTTLED_WORK if _throttled(v) else CPU_WORK)]
    frozen = [v for v in busy if runaway(v, procs_by_pid.get(v.pid))]
    # CPU in one function without a syscall, in a process that neither wrote nor read: a long
    # computation and a loop that never ends look the same from outside
    # a compile that writes nothing (no cache entry, no output) is as blind: reading sources or
    # libraries alone does not show it advances
    blind = [v for v in busy if v not in frozen and (
        v.kind == Kind.COMPILE and _writes_nothing(procs_by_pid.get(v.pid))
        or v.kind != Kind.COMPILE and _in_one_function(v) and _silent(procs_by_pid.get(v.pid)))]
    # a compiler or linker process the job runs (g++ for an inductor kernel) computes for the job
    for proc in [p for p in procs if _compiler(p) and (p.cpu_seconds or 0) >= CPU_WORK * duration > 0][:4]:
        progress = True
        sign("pid %d (%s) compiled for %.1f s of CPU" % (proc.pid, proc.comm, proc.cpu_seconds))
    for view in [v for v in busy if v not in frozen and v not in blind][:4]:
        progress = True
        sign("%s did %.1f s of CPU work in %.1f s%s" % (
            view.label, view.cpu_seconds, duration, " (slowly: throttled)" if _throttled(view) else ""))
    for view in frozen[:4]:
        frame = view.user_frame() if view.top_stack else None
        evidence.append("%s spins: %.1f s of CPU in %.1f s at one line, %s (%s:%s), in all %d stack samples, with no "
                        "syscall and no output: a busy-wait on a condition nothing changes, or a runaway call (a "
                        "regular expression backtracking, a C loop); not progress" % (
                            view.label, view.cpu_seconds, duration, frame[0] if frame else "?",
                            (frame[1] or "?").rsplit("/", 1)[-1] if frame else "?", frame[2] if frame else "?",
                            view.n_framed_samples))
    for view in [v for v in blind if v.kind == Kind.COMPILE][:4]:
        evidence.append("cannot tell whether %s's compile will finish: %.1f s of CPU compiling in %.1f s with nothing "
                        "written (no cache entry, no output): a first compile can take minutes, "
                        "and one that never ends looks the same from outside" % (view.label, view.cpu_seconds, duration))
    for view in [v for v in blind if v.kind != Kind.COMPILE][:4]:
        evidence.append("cannot tell whether %s progresses: %.1f s of CPU in one function (%s) without a syscall, "
                        "an output line or a file written in %.1f s; a long computation and a loop that never "
                        "ends look the same from outside (a longer window, or the job's own output, tells)" % (
                            view.label, view.cpu_seconds, _function_text(view), duration))
    # the host threads that wait on a GPU: when each sat in one sync call for the whole window in a
    # process that wrote nothing, the busy GPU ran one kernel all window, and a long kernel and a
    # spinning one (a flag never set) look the same
    syncing = [v for v in views if v.kind == Kind.CUDA and v.n_samples]
    one_kernel = bool(syncing) and all(v in blind or (_in_one_function(v) and _silent(procs_by_pid.get(v.pid)))
                                       for v in syncing)
    for dev in gpus.values():
        if dev.util is None or dev.util < GPU_WORK or dev.looks_hung:
            continue
        if one_kernel and dev.has_gpm and (dev.tensor or 0) < 1 and (dev.sm or 0) >= 50:
            # (SM busy with no tensor-core work: a matmul-heavy step keeps the tensor cores busy)
            evidence.append("cannot tell whether GPU %d's work ends: %.0f%% busy%s while %s waited in one sync "
                            "call all window, no tensor-core work and nothing written; a long kernel and one that "
                            "spins for ever "
                            "look the same (a longer window, or the job's own output, tells)" % (
                                dev.index, dev.util, ", SM %.0f%%" % dev.sm if dev.has_gpm else "",
                                syncing[0].label))
            blind = blind or syncing
            continue
        if dev.has_gpm and not dev.real_compute:
            # Busy flag without SM or tensor work: an NCCL kernel waiting for a peer, or a spin.
            evidence.append("GPU %d reads %.0f%% busy but only SM %.1f%%, tensor %.1f%%: waiting, not computing"
                            % (dev.index, dev.util, dev.sm or 0, dev.tensor or 0))
            continue
        progress = True
        sign("GPU %d busy %.0f%%%s" % (dev.index, dev.util,
                                                    ", SM %.0f%%" % dev.sm if dev.has_gpm else ""))
    # child programs run one after another: each one exited is a call that returned (nvidia-smi
    # per batch, a compiler per file), or a child that fails and is started again; not nothing
    exited = Counter(p.ppid for p in procs if p.exited_at is not None)
    succession = [(ppid, n) for ppid, n in exited.items()
                  if n >= 2 and ppid in procs_by_pid and procs_by_pid[ppid].exited_at is None]
    for ppid, n in succession[:2]:
        evidence.append("cannot tell whether pid %d advances: %d of its child programs exited during the window, "
                        "one after another (calls that return, slowly, or a child that fails and is started "
                        "again)" % (ppid, n))
    if halted:
        progress = False
    # (something the job needs is halted or blocked for good: no progress, whatever CPU burns)
    state = ProgressState.MAKING if progress else ProgressState.CANNOT_TELL if (
        blind or succession or repeating or piped) and not halted else ProgressState.NONE_SEEN
    if progress:
        # what shows the run advancing first, then what was seen beside it (a spin elsewhere)
        evidence = signs + [e for e in evidence if e not in signs]
    if not evidence:
        evidence.append("no CPU work in user code, no GPU work, no file advancing or growing")
    # brief: the evidence as one line a terminal shows beside the state
    return {"state": state, "evidence": evidence, "brief": clip_items(evidence, 300)}


def _compiler(proc):
    from ..knowledge.processes import match_process
    row = match_process(proc.comm, proc.cmdline)
    return row is not None and row.role == RoleKind.COMPILER


def _writes_nothing(proc):
    return proc is None or not (proc.io or {}).get("wchar") and not file_changes(proc)[1]


def _function_text(view):
    """"work at train.py:12-14": the function _in_one_function found, and the lines it was seen at."""
    if not view.top_stack:
        return "native code"
    own = [_user_line(frames) for frames, _n in view.stacks if frames]
    lines = sorted({line for _function, line in own if line is not None})
    filename = next((f[1] for f in view.top_stack if (f[0], f[2]) == own[0]), view.top_stack[0][1])
    return "%s at %s:%s" % (own[0][0], (filename or "?").rsplit("/", 1)[-1],
                            "-".join(map(str, (lines[0], lines[-1]))) if len(lines) > 1 else (lines or ["?"])[0])


def _throttled(view):
    return view.state is not None and view.state.condition == Condition.THROTTLED


def _at(entry):
    if entry.get("size"):
        return "%.0f%% of %d bytes" % (100.0 * entry.get("pos", 0) / entry["size"], entry["size"])
    return "offset %d" % entry.get("pos", 0)


def silent_output(window, focus_proc, progress):
    """The facts of a silent-output finding (formatter.silent_output says it) when the run makes
    progress but its stdout/stderr received nothing, else None."""
    if progress.state != ProgressState.MAKING or focus_proc is None:
        return None
    end_wall = (window.start or 0) + (window.duration_s or 0)
    stdio = stdio_changes(focus_proc, end_wall)
    if not stdio:
        return None
    for info in stdio.values():
        if not (info["kind"] == "null" or info["kind"] == "file" and info.get("bytes") == 0):
            return None   # a TTY, pipe or socket, or a file that grew: not provably silent
    stale = [info.get("unchanged_s") for info in stdio.values() if info.get("unchanged_s") is not None]
    return {"stdio": stdio, "unchanged_s": min(stale) if stale else None,
            "buffered": focus_proc.env.get("PYTHONUNBUFFERED") in (None, "", "0")}
