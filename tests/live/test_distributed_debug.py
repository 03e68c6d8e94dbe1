"""PyTorch's own debugging aids do not mislead the verdict (issue 34): a job that started
torch.distributed.debug's server, as PyTorch recommends for hangs, gets the verdict it gets without."""
import socket
import sys

import pytest

from helpers import inspect_json

try:
    import aiohttp  # noqa: F401
    import jinja2  # noqa: F401
    import tabulate  # noqa: F401
    import torch.distributed.debug  # noqa: F401
    HAVE_DEBUG_SERVER = True
except ImportError:
    HAVE_DEBUG_SERVER = False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", "--master_port=%d" % free_port(),
            "gloo_eval_rank_debug_server.py"] + list(args)


@pytest.mark.parametrize("server", [False, True], ids=["plain", "debug-server"])
def test_the_rank_that_never_returns_from_evaluation_is_named_with_or_without_the_debug_server(launch, server):
    if server and not HAVE_DEBUG_SERVER:
        pytest.skip("torch.distributed.debug needs aiohttp, Jinja2 and tabulate")
    w = launch("gloo_eval_rank_debug_server.py", argv=torchrun(*(["debug-server"] if server else [])), settle=3.0)
    report = inspect_json(w.pid, "--children", duration=3)
    verdict = report["verdict"]
    roles = {p["pid"]: p["role"] for p in report["processes"]}
    assert verdict["category"] == "collective", verdict["summary"]
    assert roles[verdict["pid"]] == "rank 2", (roles, verdict["summary"])
    assert "evaluate" in verdict["summary"] and "all_reduce" in verdict["summary"]
    # the frontend process rank 0 forks inherits RANK=0: it is the debug server (or, before its
    # frames are sampled, rank 0's child), never a second rank
    assert sorted(r for r in roles.values() if r.startswith("rank ")) == ["rank 0", "rank 1", "rank 2", "rank 3"], roles
