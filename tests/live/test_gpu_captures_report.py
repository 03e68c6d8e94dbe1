"""Saved GPU captures through `stalldiag report`, run as a process of its own: the Markdown report
says the GPUs were NVIDIA H200s.  The captures were taken on H200s (tools/gpu_proof.sh); their
verdicts replay offline in tests/replay/test_captures.py and tests/replay/test_gpu_families.py.
"""
import json

import pytest

from helpers import CAPTURES, run_stalldiag

# the GPU families of issue 13 (tests/replay/test_gpu_families.py)
STOPPED = ["gpu_ddp_stopped_rank", "gpu_allgather_stopped"]      # rank 1 SIGSTOPped / cgroup-frozen
STRAGGLER = ["gpu_straggler", "gpu_straggler_uneven_batches"]     # rank 1 does the work rank 0 waits for
LAUNCH_BOUND = ["gpu_launch_bound", "gpu_launch_bound_autograd"]  # the host launches tiny kernels


@pytest.mark.parametrize("name", ["gpu_matmul", pytest.param("gpu_spin_kernel", marks=pytest.mark.alone),
                                  "gpu_starved_dataloader",
                                  pytest.param("gpu_compile_autotune", marks=pytest.mark.alone), "nccl_hang"])
def test_gpu_captures_through_stalldiag_report(name, tmp_path):
    out = tmp_path / (name + ".md")
    proc = run_stalldiag("report", CAPTURES / (name + ".json"), "-o", out)
    assert proc.returncode == 0, proc.stderr
    md = out.read_text()
    assert "## GPU" in md and "NVIDIA H200" in md
    assert json.loads((CAPTURES / (name + ".json")).read_text())["capture"]["gpu"]["gpm"]


@pytest.mark.alone
@pytest.mark.parametrize("name", STOPPED + STRAGGLER + LAUNCH_BOUND)
def test_gpu_family_captures_render_through_stalldiag_report(name, tmp_path):
    out = tmp_path / (name + ".md")
    proc = run_stalldiag("report", CAPTURES / (name + ".json"), "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "NVIDIA H200" in out.read_text()
