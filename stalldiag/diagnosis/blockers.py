"""What keeps a run from moving whatever its threads do, and the progress of a scene: the
progress model (progress.py) given the blockers the findings and the chain show."""
from .explain import halted_phrase
from .progress import Progress, assess, starved
from .registry import table
from .registry.names import M
from .text import clip_items
from ..vocab import Category, EdgeKind, Kind, ProgressState, rank_of


def progress_of(scene, findings):
    """The progress of the run a scene shows, with what blocks it."""
    g = scene.g
    halted = blockers(scene, findings)
    found = assess(g.window, g.proc_list, g.views, g.gpus, halted, g.output)
    proc = g.procs.get(scene.focus.pid) if scene.focus is not None else None
    if proc is not None and proc.exited_at is not None and not halted and found["state"] == ProgressState.NONE_SEEN:
        # the run ended inside the window: no sign of progress before is not a stall
        evidence = ["pid %d exited with %s %.1f s into the window: the run ended; its output says whether it "
                    "finished its work" % (proc.pid, proc.exit_status or "an unknown status", proc.exited_at)] \
            + found["evidence"]
        return Progress(ProgressState.CANNOT_TELL, evidence, clip_items(evidence, 300))
    ending = None if halted or found["state"] != ProgressState.NONE_SEEN else (
        sleep_that_ends(scene.root) or told_to_wait(g, scene.root))
    if ending:
        # the window fell inside one sleep of the culprit: what it does when the sleep ends (a
        # retry, the next step of a slow loop, the same wait again) was not seen
        evidence = [ending] + found["evidence"]
        return Progress(ProgressState.CANNOT_TELL, evidence, clip_items(evidence, 300))
    return Progress(found["state"], found["evidence"], found["brief"])


SLEEP_ENDS_S = 60   # a sleep with longer left holds the job for minutes: no progress, as far as one can see


def sleep_that_ends(view):
    """"X sleeps through the window, N s left": a thread in one timed sleep for the whole window,
    not woken once, whose sleep ends by itself; else None."""
    detail = view.top_detail() if view is not None and view.kind == Kind.SLEEP else None
    left = detail.get("sleep_s") if isinstance(detail, dict) else None
    woken = (view.thread.ctx or {}).get("voluntary")
    # (a loop of short sleeps wakes each time; without the switch counts one sleep is not shown)
    if not left or not 1 <= left <= SLEEP_ENDS_S or view.share < 0.8 or woken is None or woken > 1:
        return None
    return ("cannot tell whether %s advances: it slept through the whole window in one sleep, which ends in %.0f s; "
            "what it does then (the next step, a retry, the same wait again) a window longer than the sleep "
            "shows" % (view.label, left))


def told_to_wait(g, view):
    """"X waits as it was told ..." when the chain's end retries between sleeps its server asked
    for (a 429, a rate limit, a Retry-After) or a back-off grown long: the wait ends by itself, and
    what comes after it (the next attempt) a window across it shows; else None."""
    retry = g.retry(view) if view is not None else None
    if not retry or retry.get("category") != Category.SLEEP or retry.get("asked_wait"):
        return None      # (a wait of minutes still to go holds the job that long: no progress, as far as seen)
    return ("cannot tell whether %s advances: it waits between attempts as it was told (a rate limit or "
            "Retry-After its output names), and the wait ends by itself; what the next attempt does a window "
            "across it shows" % view.label)


def blockers(scene, findings):
    """Why the job cannot move, whatever CPU its threads burn: a stopped or frozen process it needs
    (a rank, or one on the wait chain), a deadlock, a lock held at fork, a training loop starved of
    the GIL or waiting on a file lock for the whole window."""
    g, walk, chain = scene.g, scene.walk, scene.chain
    out, done = [], set()
    for item in findings:
        if item.kind == M.RETRY_LOOP and item.facts.get("category") == Category.SLEEP:
            continue    # (a wait the server asked for, or a back-off grown long, ends by itself)
        if item.kind in table.BLOCKS_PROGRESS and item.facts.get("failing", True):   # (a retry that shows failures)
            out.append("%s (it cannot resolve by itself)" % table.sentence(g, item))
    focus = chain[0]
    duration = g.window.duration_s or 0
    if starved(focus, duration) and len(chain) > 1:
        if walk.out_of(focus) is not None and walk.out_of(focus).kind == EdgeKind.GIL:
            out.append("%s waited for the GIL for the whole window" % focus.label)
        elif any(f.kind == M.FILE_LOCK for f in findings) and not chain[-1].state.progressing:
            out.append("%s waited on a file lock for the whole window, and its holder is not working" % focus.label)
    ranks = [pid for pid, role in g.roles.items() if rank_of(role) is not None]
    for pid in ranks + [v.pid for v in chain]:
        thread = g.main_thread(pid)
        if pid in done or thread is None or not g.halted(thread):
            continue
        done.add(pid)
        out.append("%s (pid %d) is %s: the job cannot progress until it runs again" % (
            g.roles.get(pid) or "process", pid, halted_phrase(g, thread)))
    return out
