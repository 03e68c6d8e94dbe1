"""An asyncio event loop waiting for events is what its watched fds and its timer say.

Real loops (fixtures/workloads/event_loop_waits.py): a server idle on its listener, a
loop asleep on a timer, and a lost wake-up (a Future completed from another thread
without call_soon_threadsafe), where only the loop's own wake-up socket is watched and
no timer is due.  The loop waiting on a peer over TCP is tests/replay/test_captures.py's
asyncio_selector.
"""
from helpers import inspect_json


def loop_finding(report, kind):
    return next((f for f in report["findings"] if f["kind"] == kind), None)


def wait_detail(report, pid):
    proc = next(p for p in report["capture"]["processes"] if p["pid"] == pid)
    return next(d for d in proc["details"] if isinstance(d, dict) and "epoll_fd" in d)


def test_a_server_idle_on_its_listener_is_idle_by_design(launch):
    w = launch("event_loop_waits.py", "server")
    report = inspect_json(w.pid)
    assert report["verdict"]["category"] == "sleep", report["verdict"]["summary"]
    idle = loop_finding(report, "event-loop-idle")
    assert idle is not None and "listens on 127.0.0.1:" in idle["summary"], report["findings"]
    assert "no timer due" in idle["summary"]
    assert wait_detail(report, w.pid)["timeout_ms"] == -1


def test_a_loop_asleep_on_a_timer_says_when_it_is_due(launch):
    w = launch("event_loop_waits.py", "timer")
    report = inspect_json(w.pid)
    assert report["verdict"]["category"] == "sleep", report["verdict"]["summary"]
    assert "next timer is due in" in loop_finding(report, "event-loop-idle")["summary"]
    assert 0 < wait_detail(report, w.pid)["timeout_ms"] <= 60000


def test_a_loop_only_its_own_threads_can_wake_is_a_lost_wakeup(launch):
    w = launch("event_loop_waits.py", "lost-wakeup", settle=0.8)
    report = inspect_json(w.pid)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["tid"] == w.pid
    assert "call_soon_threadsafe" in verdict["summary"] and "'scheduler'" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"
    assert loop_finding(report, "event-loop-wakeup")["tid"] == w.pid


def test_a_step_blocking_on_a_future_only_its_own_loop_can_finish_is_the_loop(launch):
    """run_coroutine_threadsafe(...).result() from the loop's own thread: the loop is the
    culprit, not the idle executor worker beside it (mqtt_threadsafe_selfwait's mechanism)."""
    w = launch("event_loop_waits.py", "self-wait", settle=0.8)
    report = inspect_json(w.pid)
    verdict = report["verdict"]
    assert verdict["tid"] == w.pid and verdict["summary"].startswith("Event loop blocked"), verdict["summary"]
    assert ".result()" in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"
