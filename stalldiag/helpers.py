"""Small helpers shared by the probes and the capture."""
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: SIGTERM this child when stalldiag dies, even by SIGKILL.

    Combined with start_new_session=True (its own process group), a Ctrl-C in
    the terminal reaches stalldiag only, which then stops its helpers in order.
    """
    try:
        import ctypes
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


def intern_row(table, index, row):
    """Position of row in table, appending it the first time (frames and stacks are shared)."""
    key = tuple(row)
    if key not in index:
        index[key] = len(table)
        table.append(list(row))
    return index[key]
