"""Where a busy thread's CPU goes: its heavy call path and self time by function, from its own
stack samples (Python frames, and native frames where they were sampled).

A forked process's stacks begin with its parent's frames, frozen at the fork (a DataLoader worker
shows the training loop's `for batch in loader:`): those are not its work, and only the frames
inside the innermost fork point count (knowledge.frames.own_frames).

  heavy path   from the outermost own frame inward, the callee holding most samples at each
               depth, while it holds at least HOT_SHARE of them
  the call     what an engineer names: where the heavy path last changes hands (the user's code to
               a library, one library to another, Python to native code), the entry into that
               code ("traceback.format_stack, called from torch's worker seeding, in 97% of
               samples"); when that last stretch is the user's own code, its deepest frame
  self time    the share of samples each function was the innermost frame of
"""
from collections import Counter
from typing import List, Optional, Tuple

from ..records import typed_record
from ..knowledge import frames as frame_table

HOT_SHARE = 0.5      # share of a thread's samples a frame of its heavy path holds at least
MIN_SAMPLES = 3      # framed samples under which a thread's hot code is not said
SELF_TOP = 3         # functions named by self time


@typed_record(frozen=True)
class HotCode:
    path: List[Tuple[tuple, float]]        # (frame, inclusive share), outermost first
    call: Tuple[tuple, float]              # the frame the code changes hands at, and its share
    caller: Optional[tuple]                # the frame that calls it
    self_time: List[Tuple[tuple, float]]   # (frame, share) of the innermost frames
    samples: int
    native: bool                           # native frames were sampled


def _key(frame):
    return frame[0], frame[1]


def owner(frame):
    """Whose code a frame is: "native:<library>", "python" (the standard library), a package's
    name, or "user"."""
    path = frame[1] or ""
    if not path.endswith(".py") and not path.startswith("<"):
        return "native:%s" % path.rsplit("/", 1)[-1].split(".so")[0]
    if path.startswith("<frozen") or frame_table.is_stdlib_file(path):
        return "python"
    package = frame_table.package_of(path)
    return package or "user"


def hot_code(view):
    """The HotCode of a thread's own samples, or None when too few were framed."""
    stacks = [(frame_table.own_frames(frames), n) for frames, n in view.stacks if frames]
    stacks = [(frames, n) for frames, n in stacks if frames and n]
    total = sum(n for _f, n in stacks)
    if total < MIN_SAMPLES:
        return None
    path, candidates, depth = [], stacks, 0
    while True:
        counts, example = Counter(), {}
        for frames, n in candidates:
            if len(frames) > depth:
                frame = frames[len(frames) - 1 - depth]
                counts[_key(frame)] += n
                example.setdefault(_key(frame), frame)
        if not counts:
            break
        key, n = counts.most_common(1)[0]
        if n / total < HOT_SHARE:
            break
        path.append((example[key], n / total))
        candidates = [(f, m) for f, m in candidates if len(f) > depth and _key(f[len(f) - 1 - depth]) == key]
        depth += 1
    if not path:
        return None
    # the last stretch of the path in one owner's code: the user's own hot function is its
    # deepest frame; a library's or native code's is where the path enters it
    start = max((i for i in range(1, len(path)) if owner(path[i][0]) != owner(path[i - 1][0])), default=0)
    call_index = len(path) - 1 if owner(path[start][0]) == "user" else start
    leaves = Counter()
    example = {}
    for frames, n in stacks:
        leaves[_key(frames[0])] += n
        example.setdefault(_key(frames[0]), frames[0])
    self_time = [(example[k], n / total) for k, n in leaves.most_common(SELF_TOP)]
    native = any(owner(f).startswith("native:") for frames, _n in stacks for f in frames[:1])
    return HotCode(path, path[call_index], path[call_index - 1][0] if call_index else None, self_time, total, native)


def busy_waits_on_children(view):
    """The thread's CPU goes to asking whether its children exited (Process.is_alive,
    Popen.poll in a loop: knowledge.frames.CHILD_POLLS): a frame of such a call on its heavy path."""
    hot = hot_code(view)
    return hot is not None and any(frame_table.polls_child(frame) for frame, _share in hot.path)


@typed_record(frozen=True)
class NativeHot:
    function: str                # the innermost named native function, most samples first
    library: str
    what: Optional[str]          # a known sink's words (knowledge/native.py), or None
    entry: Optional[str]         # the native function Python called into, when another
    share: float
    samples: int


NATIVE_SHARE = 0.5   # share of the native snapshots one function must lead to be named


def native_hot(view):
    """The NativeHot of a thread's native snapshots, or None when none was taken or no one native
    function was innermost in at least NATIVE_SHARE of them."""
    from ..knowledge import native as table
    stacks = view.native_stacks
    total = sum(n for _frames, n in stacks)
    if not total:
        return None
    leaves, entries = Counter(), Counter()
    for frames, n in stacks:
        natives = []
        for function, path, _line in frames:
            if path.endswith(".py") or path.startswith("<"):
                break           # the Python frame that called into native code
            natives.append((function, path))
        names = [(f, p) for f, p in natives if table.named(f)]
        if not names:
            continue
        leaves[names[0]] += n
        entries[names[-1]] += n
    if not leaves:
        return None
    (function, path), n = leaves.most_common(1)[0]
    if n / total < NATIVE_SHARE:
        return None
    sink_of = table.sink(function, path)
    function = _short_symbol(function)
    entry = _short_symbol(entries.most_common(1)[0][0][0]) if entries else None
    return NativeHot(function, table.library_of(path), sink_of,
                     entry if entry != function else None, n / total, total)


MAX_SYMBOL = 80


def _short_symbol(name):
    """A C++ symbol without its template and argument lists (`at::native::AVX2::VectorizedLoop2d`
    of a 600-character instantiation), at most MAX_SYMBOL characters."""
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    short = "".join(out).strip() or name
    return short if len(short) <= MAX_SYMBOL else short[:MAX_SYMBOL - 3] + "..."


def native_text(native):
    """The sentence of a NativeHot: "below Python: sre_ucs1_match (libpython3.11, CPython's regex
    engine), entered through _sre_SRE_Pattern_match, in 100% of 4 native snapshots"."""
    from .explain import pct
    what = "%s, %s" % (native.library, native.what) if native.what else native.library
    text = "below Python: %s (%s)" % (native.function, what)
    if native.entry:
        text += ", entered through %s" % native.entry
    return text + ", in %s of %d native snapshots" % (pct(native.share), native.samples)


def hot_text(hot):
    """"its CPU goes to format_stack (traceback.py:213), called from _generate_state
    (torch/utils/data/_utils/worker.py:94), in 97% of samples; self time: getline 41%, ...\""""
    from .explain import frame_text, pct
    frame, share = hot.call
    text = "its CPU goes to %s" % frame_text(frame)
    if hot.caller is not None:
        text += ", called from %s" % frame_text(hot.caller)
    text += ", in %s of %d samples" % (pct(share), hot.samples)
    leaves = [(f, s) for f, s in hot.self_time if s >= 0.1 and _key(f) != _key(frame)]
    if leaves:
        text += "; self time: %s" % ", ".join("%s %s" % (f[0], pct(s)) for f, s in leaves)
    return text
