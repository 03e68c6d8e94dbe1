"""What each distinct /proc sample of a process was, for the report's timelines: the band of the
HTML timeline, the thread kind and what it waits on (kinds.py, threads.sample_kind).  Read from
the graph's processes, once, with the rest of the diagnosis."""
from . import kinds
from .explain import detail_text
from .threads import sample_kind


def sample_key(sample):
    """The key of one /proc sample [t, state, syscall, detail index, wchan] in sample_classes."""
    padded = (list(sample) + [None] * 5)[1:5]
    return "|".join("" if v is None else str(v) for v in padded)


def sample_classes(proc):
    """sample_key -> (band, kind, what it waits on) of each distinct /proc sample of a
    types.Process."""
    details = proc.details or []
    classes, seen = {}, set()
    for thread in proc.threads:
        for sample in thread.samples or []:
            if not isinstance(sample, (list, tuple)) or len(sample) < 3:
                continue
            fields = tuple(sample[1:5])     # a sample seen before is not keyed again (most are)
            if fields in seen:
                continue
            seen.add(fields)
            state, syscall = sample[1], sample[2]
            index = sample[3] if len(sample) > 3 else None
            detail = details[index] if isinstance(index, int) and 0 <= index < len(details) else None
            kind = sample_kind(state, syscall, detail, sample[4] if len(sample) > 4 else None)
            band = "io" if state == "D" else kinds.of(kind).band
            classes[sample_key(sample)] = (band, kind, detail_text(detail))
    return classes
