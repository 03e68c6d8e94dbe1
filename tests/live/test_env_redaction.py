"""The job's configuration is read from its environment (issue 33), known knobs only, and each
value goes through the same redaction as every text of the report."""
import json
import os

import pytest

from helpers import inspect_json

pytestmark = pytest.mark.live


def test_a_known_knob_holding_a_secret_is_redacted_and_unknown_variables_are_not_read(launch):
    env = dict(os.environ, MASTER_ADDR="https://trainer:hunter2secret@store.internal",
               MY_API_TOKEN="tok-9f8e7d6c5b4a", NCCL_DEBUG="INFO")
    w = launch("sleep_loop.py", env=env)
    report = inspect_json(w.pid, duration=1)
    text = json.dumps(report)
    assert "hunter2secret" not in text and "tok-9f8e7d6c5b4a" not in text
    proc = next(p for p in report["capture"]["processes"] if p["pid"] == w.pid)
    assert proc["env"]["NCCL_DEBUG"] == "INFO" and "MY_API_TOKEN" not in proc["env"]
    assert proc["env"]["MASTER_ADDR"].startswith("https://trainer:"), proc["env"]
