"""A stream that grows by one message said again is a loop reporting its wait, not progress."""
from stalldiag.diagnosis.progress import repeats

FILELOCK = [
    "2026-12-04 13:30:39,335 filelock Attempting to acquire lock 139939395902032 on /tmp/x/.locks/a.lock",
    "2026-12-04 13:30:39,335 filelock Lock 139939395902032 not acquired on /tmp/x/.locks/a.lock, waiting 0.05 seconds",
] * 4


def test_a_lock_loop_reporting_each_attempt_repeats_its_message():
    assert "not acquired" in repeats(FILELOCK)


def test_a_heartbeat_line_with_its_own_time_stamps_repeats():
    assert repeats(["[12:00:%02d] still waiting for the server" % s for s in range(6)]) == "still waiting for the server"
    assert repeats(["1733570000.%d waiting" % s for s in range(6)]) == "waiting"


def test_a_training_log_says_something_new_each_line():
    assert repeats(["2026-12-04 13:30:%02d INFO step %d loss %.3f" % (s, s, 1.0 / (s + 1)) for s in range(8)]) is None
    assert repeats(["epoch 1: 10/100", "epoch 1: 20/100", "epoch 1: 30/100", "epoch 1: 40/100"]) is None


def test_a_few_lines_or_three_messages_are_not_a_loop():
    assert repeats(["waiting", "waiting", "waiting"]) is None
    assert repeats(["a", "b", "c", "a", "b", "c"]) is None
