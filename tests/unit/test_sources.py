"""The source reader's loop facts: which except clauses guard the call a thread is in."""
from stalldiag.sources import _enclosing, _loop_handlers

RETRY = """\
def fetch():
    while True:
        try:
            return connect()
        except OSError:
            time.sleep(1)
"""

INNER = """\
def train():
    for inputs in loader:
        if cc % 10 == 0:
            for child in children():
                try:
                    emit(affinity(child))
                except OSError:
                    pass
            emit(cpu_percent(interval=1))
"""


def handlers_at(text, lineno):
    lines = text.splitlines()
    return [h["code"] for h in _loop_handlers(lines, lineno, _enclosing(lines, lineno))["handlers"]]


def test_a_sleep_in_the_handler_of_its_loop_is_guarded():
    assert handlers_at(RETRY, 6) == ["except OSError:"]


def test_an_except_of_an_inner_loop_does_not_guard_a_call_after_that_loop():
    """affinity_env_pins_workers (fixtures/repro): `except OSError` around sched_getaffinity in an
    inner loop made its main thread's measuring sleep a retry loop."""
    assert handlers_at(INNER, 9) == []


def test_an_except_of_the_inner_loop_the_thread_is_in_is_kept():
    assert handlers_at(INNER, 6) == ["except OSError:"]
