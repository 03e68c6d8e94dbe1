"""The ranks' Flight Recorders read from a live 3-rank gloo job under torchrun (issue 34): a rank
that skips collective 4, one that runs broadcast there instead of all_reduce, one stopped by
SIGSTOP; each with PyTorch's debug server started (the report names the rank, the sequence id,
the collective and the mismatch) and without it (the same verdict from stacks, and what to set)."""
import socket
import sys

import pytest

from helpers import inspect_json

try:
    import aiohttp  # noqa: F401
    import jinja2  # noqa: F401
    import torch.distributed.debug  # noqa: F401
    HAVE_DEBUG_SERVER = True
except ImportError:
    HAVE_DEBUG_SERVER = False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


EXPECTED = {
    "skip": "rank 2 never entered collective 4 (all_reduce) of group default_pg",
    "op": "an operation mismatch at collective 4 of group default_pg: rank 2 ran broadcast where ranks 0-1 ran "
          "all_reduce",
    "stop": "ranks 0-1 waiting in collective 4 (all_reduce) of group default_pg for rank 2",
}


@pytest.mark.parametrize("server", [True, False], ids=["debug-server", "plain"])
@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_rank_and_the_collective_are_named_with_the_record_and_without_it(launch, mode, server):
    if server and not HAVE_DEBUG_SERVER:
        pytest.skip("torch.distributed.debug needs aiohttp and Jinja2")
    import os
    env = dict(os.environ, DEBUG_SERVER_PORT=str(free_port()))
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=3", "--master_port=%d" % free_port(),
            "gloo_flight_recorder.py", mode] + (["debug-server"] if server else [])
    w = launch("gloo_flight_recorder.py", argv=argv, env=env, settle=3.0)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    kinds = {f["kind"]: f for f in report["findings"]}
    assert verdict["category"] == "collective", verdict["summary"]
    assert "rank 2" in verdict["summary"]
    if mode != "op":
        assert roles[verdict["pid"]] == "rank 2", (roles, verdict["summary"])
    collectives = report["capture"]["collectives"]
    if server:
        assert EXPECTED[mode] in verdict["summary"], verdict["summary"]
        assert collectives["armed"] == ["debug-server"] and collectives["read_s"] < 2.0
        assert "flight-recorder-off" not in kinds
    else:
        assert "Flight Recorder" not in verdict["summary"]
        assert collectives["armed"] == [] and collectives["ranks"] == []
        assert "start_debug_server()" in kinds["flight-recorder-off"]["summary"]
