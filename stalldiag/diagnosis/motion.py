"""Does a thread move?  The predicates every level of the progress model, and the detectors,
share: stuck in one wait, frozen on one call, spinning on one line (no import of the registry:
the detectors the registry names use them).
"""
from .types import Process
from ..vocab import Kind

STUCK_SHARE = 0.8   # share of the window in one wait that makes a thread "stuck" in it


def stuck(view):
    """Waited the whole window: caught in its wait in STUCK_SHARE of the samples, the share
    capped by the scheduler's accounting, and not computing."""
    return view.share >= STUCK_SHARE and not (view.state is not None and view.state.progressing)


def _by_fd(snapshot):
    return {entry["fd"]: entry for entry in snapshot or []}


def _key(entry):
    return (entry.get("target"), entry.get("fd"))


def file_changes(proc):
    """(read, written, opened) files of a process over the window, from its two fd snapshots.
    proc: a types.Process or a capture's process dict."""
    proc = Process.of(proc)
    start, end = _by_fd(proc.files_start), _by_fd(proc.files_end)
    read, written, opened = [], [], []
    for fd, after in end.items():
        if after.get("kind") != "file" or fd <= 2 and "w" not in after.get("mode", "w"):
            continue
        before = start.get(fd)
        if before is None or before.get("target") != after.get("target"):
            opened.append(after)
            before = None
        pos0 = before.get("pos", 0) if before else 0
        size0 = before.get("size") if before else None
        grew = after.get("size") is not None and size0 is not None and after["size"] > size0
        if "w" in after.get("mode", "") and (grew or (before is None and after.get("size"))):
            written.append(dict(after, delta=after["size"] - (size0 or 0)))
        elif "r" in after.get("mode", "r") and after.get("pos", 0) > pos0:
            read.append(dict(after, delta=after["pos"] - pos0))
    return read, written, opened


FROZEN_SAMPLES = 3   # stack samples, all the same to the line, that make a CPU-bound stack "frozen"
FROZEN_ON_CPU = 0.95  # share of /proc samples on a CPU: a frozen stack never waits


def frozen_stack(view):
    """A computing thread on a CPU in every /proc sample whose Python stack, to the line, was the
    same in every one of at least FROZEN_SAMPLES samples: one call held it the whole window (the
    test watch makes: "CPU but the stacks did not move").  A loop paced by its input, whose
    compute is one line, is caught at that line in every sample too, but it waits between steps.
    Compiling is exempt: one compile step can take that long."""
    on_cpu = view.activity.get("running", 0) / view.n_samples if view.n_samples else 0
    return view.kind != Kind.COMPILE and view.n_framed_samples >= FROZEN_SAMPLES and len(view.stacks_by_count()) == 1 \
        and on_cpu >= FROZEN_ON_CPU


def spins(view, proc=None):
    """On a CPU all window, the user's own code at one line of one function in every stack sample
    (a `while not flag:` loop is one line; `while q.empty(): pass` too, whatever library frames
    run under it), no voluntary context switch (nothing blocked: a poll with no timeout, at
    most) and nothing written by its process: a busy-wait or a runaway call, not work."""
    on_cpu = view.activity.get("running", 0) / view.n_samples if view.n_samples else 0
    # (samples with frames: a sample a racing read cut to nothing says nothing of where it was)
    if view.kind == Kind.COMPILE or view.n_framed_samples < FROZEN_SAMPLES or on_cpu < FROZEN_ON_CPU:
        return False
    tops = {_user_line(frames) for frames, _n in view.stacks if frames}
    if len(tops) != 1:
        return False
    switches = (view.thread.ctx or {}).get("voluntary")
    return (switches is None or switches <= 1) and (proc is None or _silent(proc)) and spin_evidence(view)


def spin_evidence(view):
    """What makes one line on a CPU a spin, not work: the line is a `while` loop's test or the
    body of one (a loop over a condition), or calls what is known to spin or run away (a spin
    lock, a regular expression).  One line, no syscall and no output alone is also what a long
    numeric call looks like (a matmul, a forest's fit): runaway() rules that out first."""
    from ..knowledge.frames import RUNAWAY_CALL
    source = _line_source(view)
    code = (source.get("code") or "").lstrip()
    loop = ((source.get("loop") or {}).get("code") or "").lstrip()
    return code.startswith("while ") or loop.startswith("while ") or bool(RUNAWAY_CALL.search(code))


def numeric_compute(view):
    """The thread's time goes to a numeric library's native code: its innermost Python frame is
    the library's (sklearn's tree builder, torch's ops, numpy), or its own line hands the library
    the work (`c = a @ b`, `np.linalg.solve(...)`, `model.fit(X)`).  It computes: one call can
    take the whole window with the Python stack standing still."""
    from ..knowledge.frames import NUMERIC_LINE, NUMERIC_PACKAGES, package_of
    from .threads import user_frame_of
    for frames, _n in view.stacks[:3]:
        python = [f for f in frames or [] if (f[1] or "").endswith((".py", ".pyx"))]
        if python and package_of(python[0][1]) in NUMERIC_PACKAGES:
            return True
        mine = user_frame_of(frames or [])
        source = mine[3] if mine is not None and len(mine) > 3 and isinstance(mine[3], dict) else {}
        if NUMERIC_LINE.search(source.get("code") or ""):
            return True
    return False


def repeated_call(view):
    """The line a runaway thread's samples all sit at is in a `for` loop's body (or is its header)
    and makes no call known to run away (knowledge.frames.RUNAWAY_CALL): a loop whose time goes to
    one line's call, repeated, looks the same from Python's samples as one call that never
    returns."""
    from ..knowledge.frames import RUNAWAY_CALL
    source = _line_source(view)
    loop = (source.get("loop") or {}).get("code") or ""
    return loop.lstrip().startswith(("for ", "async for ")) and not RUNAWAY_CALL.search(source.get("code") or "")


def _line_source(view):
    """The source record ({"code", "loop", ...}) of the innermost line of the user's own code in
    the thread's top stack, or {} where it was not read."""
    from .threads import user_frame_of
    frame = user_frame_of(view.top_stack or [])
    source = frame[3] if frame is not None and len(frame) > 3 else None
    return source if isinstance(source, dict) else {}


def _line_code(view):
    """The source of the innermost line of the user's own code in the thread's top stack, if read."""
    return _line_source(view).get("code")


def computes_in_a_loop(code):
    """A line that is work repeated by a loop around it, not a wait: arithmetic or an assignment
    with no call in it (`n = (n * 31 + 7) % M`), or a comprehension over data.  Every sample of such
    a loop lands on that one line, as every sample of a spin or of one call that never returns
    does; unlike them it computes.  A `while`/`if` test and a line that calls something (a regex,
    a CUDA sync, `q.empty()`) are not this.  Unknown (no source, or it does not parse): False."""
    import ast
    text = (code or "").strip()
    if not text:
        return False
    if text.endswith(":"):
        text += " pass"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    nodes = list(ast.walk(tree))
    if any(isinstance(n, (ast.While, ast.If)) for n in nodes):
        return False
    if any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) for n in nodes):
        return True
    return not any(isinstance(n, ast.Call) for n in nodes) and any(
        isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) for n in nodes)


def runaway(view, proc=None):
    """A thread whose CPU time is not work: one call whose stack never moved, or a spin.  A
    process that wrote output or a file meanwhile moved: a few stack samples that all hit the
    line a loop spends its time at (loss.backward()) are not one call that never returned."""
    if computes_in_a_loop(_line_code(view)) or repeated_call(view) or numeric_compute(view):
        return False     # (a loop's body on one line: work, or a spin we cannot tell from it; a
                         # numeric library's call computes, however still its stack stands)
    return (frozen_stack(view) and _silent(proc)) or spins(view, proc)


def _user_line(frames):
    """(function, line) of the innermost frame of the user's own code in one stack sample.  (Not
    the outermost: a forked worker's outer frames are its parent's, frozen at the fork.)"""
    from .threads import user_frame_of
    frame = user_frame_of(frames)
    return frame[0], frame[2]


def in_one_function(view):
    """The user's code in one function in every stack sample (a spin, or one long computation)."""
    return _in_one_function(view)


def _in_one_function(view):
    """Every stack sample's own code (below any library frames) in one function, and nothing blocked."""
    return len({_user_line(frames)[0] for frames, _n in view.stacks if frames}) == 1 and (
        (view.thread.ctx or {}).get("voluntary") or 0) <= 1


STREAM_BYTES = 256 * 1024   # bytes a process read in the window, in ...
STREAM_READS = 20           # ... at least this many read calls: data streams in


def streams_in(view, proc):
    """A thread waiting to read a pipe whose process reads on, call after call: it consumes a
    stream at its writer's pace (a slow source, a server answering request after request), not
    one read that never returns."""
    io = (proc.io or {}) if proc is not None else {}
    return view.kind == Kind.PIPE and io.get("rchar", 0) >= STREAM_BYTES and io.get("syscr", 0) >= STREAM_READS


def _silent(proc):
    """Its process made no read or write syscall in the window and wrote no file."""
    if proc is None:
        return True
    io = proc.io or {}
    return not (io.get("syscr") or io.get("syscw") or io.get("wchar")) and not any(file_changes(proc)[:2])
