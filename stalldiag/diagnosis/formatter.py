"""Every sentence the diagnosis's findings say, written from their facts.

edges.py, walk.py and evidence.py find; this module says.  One function per finding kind, each
taking the Finding's facts; registry.py names, for each mechanism, the function that says it.
"""
from .explain import code_text, doing, doing_call, edge_words, frame_text, pct, process_text, request_clause
from .registry.names import M
from ..vocab import EdgeKind, Kind

LOCK_TYPES = {"FLOCK": "flock()", "POSIX": "POSIX (fcntl/lockf)", "OFDLCK": "open-file-description (OFD)",
              "LEASE": "lease"}


def _s(items):
    return "" if len(items) == 1 else "s"


def _verb_s(items):
    return "s" if len(items) == 1 else ""


def _labels(views):
    return ", ".join(v.label for v in views)


def proc_text(proc, pid):
    return process_text(proc, limit=160) if proc else "pid %d (not inspected)" % pid


def lock_holder(g, holder, waiter, wants, frame, held):
    return "%s holds `%s` (`%s`, line %d, in %s), which %s waits for; it is %s" % (
        holder.label, wants, code_text(held["code"]), held["line"], frame[0], waiter.label, doing_call(holder))


def likely_deadlock(g, threads):
    return "likely deadlock: %d threads blocked on locks for the whole window and none runs (%s)" % (
        len(threads), _labels(threads))


def held_at_fork(g, waiter, wants, lock_frame, parent, holder):
    what = wants or (lock_frame and "the lock taken in %s (%s)" % (lock_frame[0], lock_frame[1].rsplit("/", 1)[-1])) \
        or "a lock"
    text = ("%s waits on %s that no thread of pid %d holds: pid %d was forked from pid %d while another thread "
            "held it, and that thread does not exist in the child, so nothing will ever release it"
            % (waiter.label, what, waiter.pid, waiter.pid, parent))
    if holder is not None:
        text += "; in the parent, %s is inside it (%s)" % (holder.label, frame_text(holder.user_frame()) or "no Python frame")
    return text


def missed_task_done(g, waiter, consumers):
    return ("%s waits in Queue.join() at %s for every item to have its task_done(), but the queue's consumer%s "
            "(%s) wait%s in get() for new items: the queue is empty, so a task_done() call was missed (a path "
            "that skips it: an early `continue`, an exception caught before it), and join() will never return" % (
                waiter.label, frame_text(waiter.user_frame()) or "?", _s(consumers), _labels(consumers),
                _verb_s(consumers)))


def nobody_left(co_waiters, stuck_too, alone, native, timers=()):
    why = []
    if co_waiters:
        why.append("%s wait%s at the same line" % (_labels(co_waiters), _verb_s(co_waiters)))
    if stuck_too:
        why.append("%s wait%s on it or on a wait of %s own, stuck" % (
            _labels(stuck_too), _verb_s(stuck_too), "its" if len(stuck_too) == 1 else "their"))
    if timers:
        why.append("%s sleep%s with a minute or more left, a timer or watchdog" % (
            _labels(timers), _verb_s(timers)))
    if alone:
        why.append("no other Python thread is alive in that process%s" % (
            " (only %d native helper thread(s))" % native if native else ""))
    return "; ".join(why)


def orphaned_wait(g, waiter, co_waiters, stuck_too, alone, native, pool, timers=()):
    # what is seen, not the possible stories: which thread should have ended the wait is not
    # among the live ones, and why it is not cannot be seen from the stacks
    return ("%s waits (%s) at %s for another thread of pid %d, and no live thread is left to end the wait: %s; "
            "the thread that should end it is not among them" % (
                waiter.label, waiter.frame_kind, frame_text(waiter.user_frame()) or "?", waiter.pid,
                nobody_left(co_waiters, stuck_too, alone, native, timers)))


def stuck_object(g, waiter, stuck, co_waiters, stuck_too, alone, native, pool, timers=()):
    held = stuck.held
    what = held.type.rsplit(".", 1)[-1]
    where = frame_text(waiter.user_frame()) or "?"
    if held.frame == (waiter.user_frame() or [None])[0]:
        text = "%s waits at %s on %s, %s: %s" % (waiter.label, where, held.local, _an(what), stuck.says)
    else:
        text = "%s waits in %s at %s on %s: %s" % (waiter.label, held.frame, where, _an(what), stuck.says)
    if stuck.closed:
        return text
    return "%s; no live thread is left to change that: %s" % (
        text, nobody_left(co_waiters, stuck_too, alone, native, timers) or "none runs")


def _an(word):
    return ("an " if word[:1].lower() in "aeiou" or word.startswith("RLock") else "a ") + word


def pool_deadlock(g, waiter, co_waiters, stuck_too, alone, native, pool, timers=()):
    # every worker waits on tasks that need a free worker of the same pool
    return ("pool deadlock: %s, a worker of %s, waits (%s) at %s for a task queued to the same pool, and no worker "
            "is free to run it: %s" % (waiter.label, pool, waiter.frame_kind, frame_text(waiter.user_frame()) or "?",
                                       nobody_left(co_waiters, stuck_too, alone, native, timers) or "it is the only worker"))


def file_lock(g, waiter, lock, blocked, holder_proc):
    mode = (lock.mode or "an").lower().replace("write", "a write").replace("read", "a read")
    where = "outside the inspected tree" if not lock.holder_in_tree else "in the job"
    return "%s %s for %s %s lock on %s held by %s, %s" % (
        waiter.label, "waits" if blocked else "retries between sleeps (its process has the file open)", mode,
        LOCK_TYPES.get(lock.type, lock.type or "file"), lock.where(),
        proc_text(holder_proc, lock.holder_pid), where) + _held_for(g, holder_proc)


def _held_for(g, proc):
    """"; it started 3 min ago: it has held the lock at most that long" (the kernel does not say
    when a lock was taken; the holder's start time bounds it)."""
    host, window = g.machine, g.window
    if proc is None or proc.start_time is None or not host.boot_time or not window.start:
        return ""
    started = host.boot_time + proc.start_time / float(host.clk_tck or 100)
    age = window.start + (window.duration_s or 0) - started
    if age < 0:
        return ""
    return "; it started %s before the window ended, so it has held the lock at most that long" % _duration(age)


def lost_task(g, waiter, workers, replacements):
    return ("%s waits for a multiprocessing.Pool result at %s, but all %d workers of the pool are idle, waiting for "
            "a task: none has it, so the result will never come. A worker that dies mid-task (SIGKILL, the OOM "
            "killer, os._exit) takes its task with it, and the Pool replaces the worker, not the task%s" % (
                waiter.label, frame_text(waiter.user_frame()) or "?", workers,
                "; %s started %s after the first worker: replacement%s" % (
                    ", ".join("pid %d" % pid for pid, _gap in replacements),
                    ", ".join("%.1f s" % gap for _pid, gap in replacements), _s(replacements))
                if replacements else ""))


def pool_results_undelivered(g, waiter, workers, error):
    return ("%s waits for a multiprocessing.Pool result at %s, but the pool's result-handler thread, the one that "
            "hands each result to its caller, is gone%s, and all %d workers are idle: the results came back and "
            "nobody is left to deliver them, so the wait never ends (a worker's exception or result that cannot "
            "be unpickled in the parent kills that thread)" % (
                waiter.label, frame_text(waiter.user_frame()) or "?",
                " (the job's output shows it died on %s)" % error if error else "", workers))


def pool_workers_dying(g, waiter, exited, worker, error):
    return ("%s waits for a multiprocessing.Pool result at %s, but the pool's workers die one after another: %d "
            "exited in the window, each replaced by the pool, and the job's output shows %s died on %s. A worker "
            "that dies before it finishes a task (in the pool's initializer, at an import) is replaced for ever, "
            "and no result comes" % (waiter.label, frame_text(waiter.user_frame()) or "?", exited, worker, error))


def lost_batch(g, waiter, workers, error):
    why = ("; the job's output shows a worker's queue feeder failed to send one: %s" % error if error else
           ". A worker drops a batch it cannot send (its queue feeder fails: too many open files to pass its "
           "tensors, a sample that does not pickle) and goes on; the traceback goes to its stderr")
    return ("%s waits for a batch at %s, but the %s (%s) %s idle, waiting on %s index queue%s: none is making it, "
            "so it will never come%s" % (
                waiter.label, frame_text(waiter.user_frame()) or "?",
                "%d DataLoader workers" % len(workers) if len(workers) > 1 else "one DataLoader worker",
                ", ".join("pid %d" % w.pid for w in workers), "are" if len(workers) > 1 else "is",
                "their" if len(workers) > 1 else "its", _s(workers), why))


def straggler(g, straggler, waiter, gpu, waiter_gpu):
    roles = g.roles
    return ("%s is the straggler: its GPU %d computes (SM %.0f%%, tensor %.0f%%) while %s's GPU %d only waits "
            "(SM %.1f%%, tensor %.1f%%) in the collective that needs it" % (
                _rank(roles, straggler), gpu.index, gpu.sm, gpu.tensor or 0, _rank(roles, waiter),
                waiter_gpu.index, waiter_gpu.sm or 0, waiter_gpu.tensor or 0))


def _rank(roles, pid):
    return "%s (pid %d)" % ((roles or {}).get(pid) or "process", pid)


def compiler_busy(g, compiler, waiter):
    return "%s compiles through %s (%s), on CPU %d%% of the window" % (
        waiter.label, proc_text(g.procs.get(compiler.pid), compiler.pid), g.roles.get(compiler.pid),
        round(100 * compiler.share))


# --- cycles: who waits on whom, all the way round ------------------------------------------

def cycle(g, cycle, edges):
    """A cycle of edges; edges[i] leads from cycle[i] to cycle[i + 1] (the last back to the first)."""
    kinds = {e.kind for e in edges}
    closing = edges[-1]
    if len(cycle) == 1 and closing.facts.get("self"):
        return _self_deadlock(cycle[0], closing)
    if kinds == {"join"}:
        return "join deadlock: %s; each waits for the next to exit, and none can" % "; ".join(
            "%s joins %s" % (e.waiter.label, e.waker.label) for e in edges)
    if kinds == {M.LOCK_HOLDER}:
        where = "" if len({v.pid for v in cycle}) == 1 else " across processes"
        return "lock-order deadlock%s: %s" % (where, "; ".join(
            "%s holds %s and wants %s" % (e.waiter.label, _wants(prev), e.facts.get("wants"))
            for prev, e in zip(edges[-1:] + edges[:-1], edges)))
    if closing.kind == M.FILE_LOCK:
        return "file-lock deadlock across processes: %s: nobody can move" % "; ".join(
            "%s waits for %s, held by pid %d" % (proc_text(g.procs.get(e.waiter.pid), e.waiter.pid),
                                                 _lock_name(e), e.waker.pid) if e.kind == M.FILE_LOCK else
            "%s waits for the task pid %d runs, at %s" % (proc_text(g.procs.get(e.waiter.pid), e.waiter.pid),
                                                         e.waker.pid, frame_text(e.waker.user_frame())) if e.kind == EdgeKind.TASK else
            "%s %s, pid %d" % (proc_text(g.procs.get(e.waiter.pid), e.waiter.pid), edge_words(e), e.waker.pid)
            for e in edges)
    if M.LOCK_HOLDER in kinds:
        return _through_lock(edges)
    if kinds <= {"peer"} and all(e.facts.get("via") == "tcp" for e in edges):
        return ("both ends of a connection wait to receive, so neither will send: %s. A request or reply was "
                "lost, or one side (a server that reads and never answers) waits for the other" % " → ".join(
                    "%s (%s)" % (v.label, _wait_words(v)) for v in cycle))
    return "deadlock across processes: %s, which waits on the first: nobody can move" % " → ".join(
        "%s (%s)" % (v.label, _wait_words(v)) for v in cycle)


def _wants(edge):
    return edge.facts.get("wants")


def _lock_name(edge):
    lock = edge.facts.get("lock")
    return (lock.where() if lock is not None else None) or "a lock"


def _self_deadlock(view, edge):
    wants, frame, held = edge.facts["wants"], edge.facts["frame"], edge.facts["held"]
    inner = edge.facts.get("reentered")
    if inner:
        return ("self-deadlock by re-entry: %s waits for `%s` in %s (%s:%d), called again while an outer call of "
                "it holds `%s` (`%s`, line %d): the same lock when both calls are on the same object (a signal "
                "handler or a callback run inside the outer call), and a threading.Lock is not reentrant" % (
                    view.label, wants, inner[0], (inner[1] or "?").rsplit("/", 1)[-1], inner[2], wants,
                    code_text(held["code"]), held["line"]))
    same = edge.facts.get("same") or []
    return ("self-deadlock: %s waits for `%s`, which it already holds (%s, line %d, in %s): a threading.Lock is not "
            "reentrant, so nothing can release it%s" % (
                view.label, wants, "`%s`" % code_text(held["code"]), held["line"], frame[0],
                "; %s wait%s on the same lock" % (_labels(same), _verb_s(same)) if same else ""))


def _through_lock(edges):
    """The lock one thread waits for is held by a thread earlier on the walk, which waits (on a
    queue, a join, an event, ...) for what comes after it."""
    closing = edges[-1]
    holder, wants = closing.waker, closing.facts.get("wants")
    text = "deadlock through a lock: %s holds `%s`" % (holder.label, wants)
    if closing.facts.get("held"):
        held, frame = closing.facts["held"], closing.facts["frame"]
        text += " (`%s`, line %d, in %s)" % (code_text(held["code"]), held["line"], frame[0])
    for e in edges[:-1]:
        v = e.waiter
        text += " while it waits (%s) at %s for %s" % (v.frame_kind or v.kind, frame_text(v.user_frame()) or "?",
                                                      e.waker.label)
        text = text if e.waker is closing.waiter else text + ", which"
    return "%s, which waits for `%s`: none of them can move" % (text, wants)


def _wait_words(view):
    from .explain import detail_text
    what = detail_text(view.top_detail())
    words = {"child": "waits for its child to exit", "pipe": "blocked on a pipe", "ipc": "waits for a message",
             "network": "waits to receive", "loop-wakeup": "waits for a wake-up from a thread of its own process"}
    text = words.get(view.kind, view.kind)
    if view.kind == Kind.PIPE and any(label.startswith("write") for label in view.activity):
        text = "blocked writing to a full pipe that is not drained"
    return text + (" on %s" % what if what else "")


def retry_loop(g, retrier, where, loop, handlers, library, failures, lines, failing, category, asked_wait=None):
    if asked_wait:
        return ("%s sleeps between attempts at %s%s, in a sleep of up to %s: a wait this long was asked for (a "
                "server's Retry-After on a 429 or 503) or is a back-off grown long; nothing is tried meanwhile"
                % (retrier.label, frame_text(where) or "?", ", in %s" % library if library else "",
                   _duration(asked_wait)))
    text = "%s %s at %s" % (retrier.label, "retries between sleeps" if failing else "sleeps between attempts",
                            frame_text(where) or "?")
    if library:
        text += ", in %s" % library
    elif loop:
        text += ", in the loop `%s` (line %d)%s" % (code_text(loop["code"]), loop["line"], (
            " that catches %s" % ", ".join("`%s`" % code_text(h) for h in handlers)) if handlers else "")
    if failures:
        text += "; %s in the window" % "; ".join(
            "%s() failed %d times%s" % (name, n, " (%s)" % ", ".join(
                "%s %d" % (e, c) for e, c in sorted(errnos.items(), key=lambda kv: -kv[1])) if errnos else "")
            for name, n, errnos in failures[:3])
    if lines:
        text += "; it last wrote: %s" % lines[-1]
    if failing:
        text += ": the call it retries keeps failing, and the job does nothing else meanwhile"
    else:
        text += ": if that call keeps failing the job only retries (no failure was seen)"
    if not failures:
        text += " (--syscalls exact counts the failed calls and their errors)"
    return text


def _duration(seconds):
    if seconds >= 5400:
        return "%.1f hours" % (seconds / 3600.0)
    return "%d minutes" % round(seconds / 60.0) if seconds >= 120 else "%d s" % round(seconds)


def peer_not_serving(g, waiter, target, peer, peer_thread):
    from .explain import detail_text
    text = ("%s waits to receive on %s; %s holds the other end, but no thread of it waits on that connection "
            "or works (%s is %s): it is not answering" % (
                waiter.label, detail_text(waiter.top_detail()) or target, proc_text(g.procs.get(peer), peer),
                peer_thread.label, doing(peer_thread)))
    where = request_clause(g, target)
    return text + ("; " + where if where else "")


def _timer_words(timeout_ms):
    if timeout_ms is None:
        return "its next timer is not known"
    if timeout_ms < 0:
        return "it has no timer due"
    return "its next timer is due in %.1f s" % (timeout_ms / 1000.0)


def event_loop_idle(g, loop_thread, listeners, timeout_ms):
    text = ("%s runs an asyncio event loop with nothing ready, and no connection, pipe or socket of another "
            "process among what it watches: " % loop_thread.label)
    if listeners:
        text += "it listens on %s for clients, and " % ", ".join(listeners)
    return text + _timer_words(timeout_ms) + " (idle by design unless a task should be running)"


def event_loop_wakeup(g, loop_thread, wakeup, threads):
    text = ("%s runs an asyncio event loop that waits with no timer and nothing from outside: it watches only "
            "its own wake-up channel (%s), which only a thread of pid %d can write to, through "
            "loop.call_soon_threadsafe().  A Future or task completed from another thread without it never "
            "wakes the loop (a lost wake-up)" % (loop_thread.label, ", ".join(wakeup) or "none", loop_thread.pid))
    if threads:
        text += "; threads of pid %d that could: %s" % (loop_thread.pid, "; ".join(
            "%s at %s" % (v.label, frame_text(v.user_frame()) or "?") for v in threads[:4]))
    return text


# --- evidence.py's findings: the numbers around a verdict, and findings on their own ----------

def dataloader_starved(g, loop, starved, states, duration, read_bytes, rchar, files):
    text = "the training loop is starved: %s waited on DataLoader workers in %s of its stack samples" % (
        loop.label, pct(starved))
    if states:
        text += "; %d workers: %s" % (sum(states.values()), ", ".join("%d %s" % (n, k) for k, n in states.most_common()))
        if duration:
            text += "; workers read %.1f MB/s from storage (%.1f MB/s in all)" % (
                read_bytes / duration / 1e6, rchar / duration / 1e6)
        if files:
            text += "; reading %s" % "; ".join(files[:4])
    return text


def compiling(g, compiler, share, duration, target, runs):
    text = "%s compiling in %s of stack samples (%.1f s of the %.1f s window)" % (
        compiler.label, pct(share), share * duration, duration)
    if target:
        text += "; compiling what %s calls" % target
    if runs > 1:
        text += "; compilation started %d separate times in the window: looks like repeated recompiles" % runs
    return text


def rank_groups_text(g, waiting, outliers):
    label = lambda pid: "%s (pid %d)" % (g.roles.get(pid), pid)
    return "ranks in the collective/rendezvous: %s; elsewhere: %s" % (
        ", ".join(label(p) for p in waiting) or "none", ", ".join(label(p) for p in outliers) or "none")


def missing_ranks(g, missing, world, elsewhere=False):
    if elsewhere:
        return ("ranks %s of world size %s run on other hosts (every rank of this one is here): "
                "`stalldiag merge` their reports with this one" % (missing, world))
    return "ranks %s of world size %s never joined (no process with that RANK in the inspected tree)" % (
        missing, world)


def hung_kernel(g, waiter, gpu):
    return ("GPU %d reads %.0f%% busy but only %.1f%% of SMs are active and tensor cores idle: the kernel looks "
            "hung or spinning, while %s waits for it" % (gpu.index, gpu.util, gpu.sm, waiter.label))


def gpu_bound(g, gpu):
    return ("GPU %d is really computing (SM %.0f%%, tensor %.0f%%): the run is GPU-bound, the host waits for "
            "kernels that are doing work" % (gpu.index, gpu.sm, gpu.tensor or 0))


def collective_on_gpu(g, waiter, gpu):
    return ("%s waits on GPU %d, which reads %.0f%% busy with %s: a communication kernel (NCCL) waiting for its "
            "peer, not compute" % (waiter.label, gpu.index, gpu.util, "SM %.1f%%, tensor %.1f%%" % (
                gpu.sm, gpu.tensor or 0) if gpu.has_gpm else "no GPM data"))


def launch_bound(g, host, gpu):
    return ("launch-bound: GPU %d is nearly idle (utilization %.0f%%, SM %.1f%%) while %s spends the window on "
            "the CPU issuing work: the host, not the GPU, sets the pace (small kernels, Python overhead; CUDA "
            "graphs or larger batches help)" % (gpu.index, gpu.util or 0, gpu.sm or 0, host.label))


def gpu_starved(g, gpu):
    return ("GPU %d idle: utilization %.0f%%, idle in %.0f%% of samples while the training loop waits for its "
            "input pipeline" % (gpu.index, gpu.util, 100 * gpu.idle_share))


def xid(g, event):
    return "Xid %s on GPU %s at %.1f s" % (event.get("xid"), event.get("device"), event.get("t", 0))


def ecc(g, index, errors):
    return "GPU %d: %d new uncorrected ECC errors during the window" % (index, errors)


def gpu_throttled(g, gpu, reasons):
    from ..knowledge.gpu import reasons_text
    return "GPU %d clocks slowed by %s" % (gpu.index, ", ".join(reasons_text(reasons)))


def waker_unseen(g, waiter, record):
    return "%s waits on %s (%s): its waker cannot be seen: %s" % (
        waiter.label, record.target or record.wait, record.syscall or record.wait, record.why_unseen)


def mount(g, waiter, record):
    where = record.mount
    served = ", ".join("pid %s (%s)" % (s.get("pid"), s.get("comm")) for s in where.get("served_by") or [])
    text = "%s waits on %s, on %s (%s from %s%s)%s" % (
        waiter.label, record.target, where.get("mountpoint"), where.get("fstype"), where.get("source") or "?",
        ", server %s" % where["server"] if where.get("server") else "", "; served by %s" % served if served else "")
    if record.kernel_stack:
        text += "; kernel stack: %s" % " < ".join(record.kernel_stack[:6])
    return text


def event_loop_blocked(g, loop_thread):
    return ("%s runs an asyncio event loop, and one step has held it for the whole window: %s at %s inside a "
            "coroutine or callback, without awaiting, so no other task of that loop runs (await an async call "
            "instead, or move the work to an executor)" % (
                loop_thread.label, doing_call(loop_thread), frame_text(loop_thread.user_frame()) or "?"))


def silent_output(g, stdio, unchanged_s, buffered):
    silent, reasons = [], []
    for fd, info in sorted(stdio.items()):
        name = {1: "stdout", 2: "stderr"}[fd]
        if info["kind"] == "null":
            silent.append("%s goes to /dev/null" % name)
        else:
            stale = info.get("unchanged_s")
            silent.append("%s -> %s received 0 bytes%s" % (
                name, info["target"], " (unchanged for %.0f s)" % stale if stale is not None else ""))
    if stdio.get(1, {}).get("kind") != "tty":
        if buffered:
            reasons.append("stdout is not a TTY, so Python block-buffers print() (about 8 KiB) and "
                           "PYTHONUNBUFFERED is not set: lines appear only when the buffer fills")
        reasons.append("progress bars (tqdm) and rich consoles draw little or nothing without a TTY")
    reasons.append("logging.info() prints nothing when no handler is configured (the default level "
                   "is WARNING)")
    return "the run is making progress but its output is silent: %s. Likely: %s" % (
        "; ".join(silent), "; ".join(reasons))


def collective_mismatch(g, ranks):
    from ..knowledge.frames import in_backward
    parts = ["%s (pid %d) waits at %s%s" % (g.roles.get(v.pid), v.pid, frame_text(v.user_frame()) or "?",
                                           " (backward(): DDP's gradient all-reduce)" if in_backward(v.top_stack)
                                           else "") for v in ranks]
    return ("%s: every rank waits in a collective, but not the same one, so none completes (a rank that ran "
            "out of batches early, uneven inputs, or took another branch)" % "; ".join(parts))


def waker_exited(g, waiter, dead):
    return ("%s waits at %s on a lock or event in shared memory that no other live process maps; %s, the "
            "child that shared it, exited%s: nothing is left to set it" % (
                waiter.label, frame_text(waiter.user_frame()) or "?", "; ".join(process_text(p) for p in dead[:3]),
                " (%s)" % "; ".join(p.exit_status for p in dead[:3] if p.exit_status)
                if any(p.exit_status for p in dead[:3]) else ""))


def pool_empty(g, waiter, exited):
    return ("%s waits for results from a process pool, but the pool has no live worker: its workers exited%s and "
            "none was started in their place, so the tasks still queued will never run (a pool that retires "
            "workers, max_tasks_per_child, or workers that died)" % (
                waiter.label, " (%s)" % "; ".join(process_text(p) for p in exited[:3]) if exited else ""))


def barrier_incomplete(g, call, parties):
    pids = sorted({v.pid for v in parties})
    return ("%d processes (pids %s) wait at one barrier (a multiprocessing.Barrier) at %s, and none of them "
            "runs: a party is missing, one that died or never arrived, so the barrier cannot complete; a party "
            "that dies after arriving leaves the others blocked even past their timeout" % (
                len(pids), ", ".join(map(str, pids)), frame_text(call)))


def unnumbered_ranks(g, pids, parties):
    why = "wait at one process-shared barrier" if parties == pids else \
        "run torch.distributed (gloo/NCCL/TCP-store threads)"
    return ("pids %s %s with no RANK variable: they are numbered here by pid, which may not be their rank" % (
        ", ".join(map(str, pids)), why))


def skipped_children(g, count):
    return "%d child process(es) not inspected; add --children" % count


def exited(g, proc):
    if proc.exit_status:
        return "%s has exited, %s; it is a zombie its parent has not reaped" % (process_text(proc), proc.exit_status)
    return "%s exited at %.1f s into the window" % (process_text(proc), proc.exited_at)


def no_python_stacks(g, proc):
    return "%s: no Python stacks (%s)" % (process_text(proc), proc.python.get("reason") or "unknown")


def compile_workers(g, busy, workers, compiling):
    text = "inductor compile-worker pool: %d of %d workers busy" % (busy, workers)
    if not busy and not compiling:
        text += "; an idle pool is left over from earlier compiles and does not mean compiling"
    return text


def compiler_processes(g, compilers):
    return "%d compiler/linker processes ran during the window (%s)" % (
        sum(compilers.values()), ", ".join("%s x%d" % (c, n) for c, n in compilers.most_common()))


def d_state(g, thread, share):
    return "%s in uninterruptible sleep (D) %s of the window" % (thread.label, pct(share))
