"""What an asyncio event loop waiting for events waits for (a part of what a thread really is).

A loop between steps sits in epoll_wait (or poll/select) on every fd it watches.  Which
of those could end the wait decides what the loop is:
  a connection to a peer, or a pipe or socket held by another process
                    it waits on that peer (network, a pipe): the edges follow it
  only listeners, or a timer due (a finite timeout)
                    idle by design: a server waiting for clients, a sleep
  only its own wake-up socket, no timer (timeout -1)
                    nothing outside can wake it: only another thread of its own process,
                    through loop.call_soon_threadsafe().  A Future completed from another
                    thread without it is a lost wake-up: a wait for a notification that
                    will not come, as a condition nobody signals.
"""
from ..knowledge import frames as frame_table

LOOP_KINDS = ("poll", "ipc", "pipe", "network", "sleep", "other")
CONNECTED = ("ESTABLISHED", "SYN_SENT", "SYN_RECV", "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2", "LAST_ACK", "CLOSING")


def loop_wait(g, view):
    """{"outside", "listeners", "wakeup", "timeout_ms"} for a thread that is an event loop waiting
    for events, else None.  outside: the watched fds another process can end the wait through."""
    if view.kernel_kind not in LOOP_KINDS or not frame_table.in_event_loop_wait(view.top_stack):
        return None
    detail = view.top_detail()
    if not isinstance(detail, dict) or "watching" not in detail:
        return None
    out = {"outside": [], "listeners": [], "wakeup": [], "timeout_ms": detail.get("timeout_ms")}
    for fd in detail["watching"]:
        out[_side(g, view, fd)].append(fd)
    return out


def _side(g, view, fd):
    kind, target = fd.get("kind"), fd.get("target") or ""
    if kind == "socket":
        if fd.get("state") == "LISTEN":
            return "listeners"
        return "outside" if fd.get("state") in CONNECTED or fd.get("proto") == "udp" else "wakeup"
    if kind in ("unix", "pipe", "fifo"):
        # who holds the other end: a unix socket's peer socket (none known: anyone may), or the
        # pipe itself, here or anywhere on the host
        ends = set(g.other_end(target, g.unix_peers)) if kind == "unix" else \
            set(g.holders.get(target, ())) | set(g.waker_pids(view, target))
        # both ends its own: a wake-up channel; an end elsewhere, or unknown: a peer
        return "wakeup" if ends == {view.pid} else "outside"
    if kind == "tty":
        return "outside"
    return "wakeup"    # an eventfd, a timerfd, a file: this process's own


OUTSIDE_KINDS = (("network", ("socket",)), ("ipc", ("unix",)), ("pipe", ("pipe", "fifo")), ("tty", ("tty",)))


def loop_kind(loop):
    """The kind of a loop's wait: what it waits on outside its process, else idle_kind()."""
    kinds = {fd.get("kind") for fd in loop["outside"]}
    for kind, fd_kinds in OUTSIDE_KINDS:
        if kinds & set(fd_kinds):
            return kind
    return idle_kind(loop)


def idle_kind(loop):
    """The kind of a loop with nothing outside to wait on: "poll" (idle: a timer is due, or it
    listens) or "loop-wakeup" (only a thread of its process can wake it)."""
    if loop["listeners"] or loop["timeout_ms"] is None or loop["timeout_ms"] >= 0:
        return "poll"
    return "loop-wakeup"
