"""A job stopped by its terminal's job control (one detector and its sentence, a registry row).

A process group in the background of its controlling terminal that reads from the terminal is
sent SIGTTIN; one that writes to it with `stty tostop` set, or changes its settings (tcsetattr,
as ffmpeg does at start), SIGTTOU.  Either stops every process of the group.  The kernel shows it
as a stopped thread whose call is on a terminal: the call it tried, on the terminal it tried it on.
"""
from collections import Counter

from .registry.names import M
from .types import Finding
from ..vocab import Condition

TERMINAL_CALLS = ("read", "readv", "write", "writev", "ioctl")


def stopped_by_terminal(scene):
    """The stopped thread of the root's process group caught in a call on a terminal, or None."""
    g, root = scene.g, scene.root
    if not g.halted(root) or g.halt_state(root).condition != Condition.STOPPED:
        return None
    for view in g.views:
        state = g.halt_state(view)
        if state is None or state.condition != Condition.STOPPED or not _same_group(g, view, root):
            continue
        detail = view.top_detail()
        fd = detail.get("fd") if isinstance(detail, dict) else None
        call = _stopped_in(view)
        if isinstance(fd, dict) and fd.get("kind") == "tty" and call in TERMINAL_CALLS:
            return Finding.about(M.TERMINAL_STOP, view, stopped=view, call=call, terminal=fd.get("target"),
                                 root=root)
    return None


def _stopped_in(view):
    """The syscall a stopped thread was caught in, most samples (its activity says only "stopped")."""
    calls = Counter({call: n for (state, call), n in view.state_syscalls.items() if state == "T" and call})
    return calls.most_common(1)[0][0] if calls else None


def _same_group(g, view, root):
    """One process, or one process group (a signal of job control stops the whole group)."""
    if view.pid == root.pid:
        return True
    a, b = g.procs.get(view.pid), g.procs.get(root.pid)
    return a is not None and b is not None and a.pgid is not None and a.pgid == b.pgid


def text(g, stopped, call, terminal, root):
    others = "" if stopped.pid == root.pid else ", and every process of its group with it, pid %d among them" % root.pid
    signal = "SIGTTIN, a read" if call.startswith("read") else "SIGTTOU, a write or a change of its settings"
    return ("%s is stopped by its terminal's job control: it was in %s on %s when its process group, in the "
            "background of that terminal, was stopped (%s)%s. It stays stopped until the group is brought to the "
            "foreground (fg) or its terminal input and output go elsewhere (stdin from /dev/null, output to a file)"
            % (stopped.label, call, terminal, signal, others))
