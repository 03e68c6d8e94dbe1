"""A retry loop's category from the words of its failure: the error that names a resource (a fork
refused, a full disk) outweighs what the except clause around it suggests (knowledge/retries.py).
Retry loops on real workloads are in tests/live/test_retry_loops.py.
"""
import pytest


@pytest.mark.parametrize("texts, category", [
    (["except BlockingIOError as e:", "fork: retry: Resource temporarily unavailable"], "subprocess"),
    (["except BlockingIOError as e:", "spawn of worker 3 failed: [Errno 11] Resource temporarily unavailable"],
     "subprocess"),
    (["except BlockingIOError as e:", "could not lock /data/.lock: Resource temporarily unavailable"], "locks"),
    (["except OSError:", "[Errno 28] No space left on device; retrying"], "io"),
])
def test_an_error_that_names_its_resource_outweighs_what_the_except_clause_suggests(texts, category):
    from stalldiag.knowledge import retries
    assert retries.failure_category(*texts) == category


@pytest.mark.parametrize("text, category", [
    ("for ckpt in checkpoints_iterator(model_dir, min_interval_secs=60, timeout=eval_timeout):", None),
    ("while not done(deadline, poll_timeout):", None),
    ("socket.timeout: timed out", "network"),
    ("except TimeoutError:", "network"),
    ("if elapsed > timeout == True", "network"),
])
def test_a_timeout_argument_in_a_loops_code_is_no_failure(text, category):
    """A loop's code is read for what it retries: `timeout=` passed to a call, or a name ending in
    _timeout, says how long it waits, not that something timed out."""
    from stalldiag.knowledge import retries
    assert retries.category_of_text(text) == category
