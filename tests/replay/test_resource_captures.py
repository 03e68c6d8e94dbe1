"""The job's resources in saved captures: GPU cases captured on an H200 (tools/gpu_proof.sh) and a
server that never came up beside a leftover copy on its port.  The limits on real workloads are
tested in tests/live/test_resource_limits.py.
"""
import pytest

from helpers import FIXTURES


# -- the GPU cases, captured on an H200 (tools/gpu_proof.sh) and replayed ----------------------

def _replayed(name):
    return _replayed_report(name)["verdict"]


def test_a_gpu_shared_with_another_users_process_names_it_with_its_sm_share():
    verdict = _replayed("gpu_shared_with_neighbour")
    assert verdict["category"] == "cuda" and "GPU-bound" in verdict["summary"]
    assert "GPU 0 is shared with pid 460 (not part of this job, `python3 -u gpu_matmul_neighbour.py`), 70% of SM" \
        in verdict["summary"]


def test_gpu_memory_held_outside_the_job_explains_its_out_of_memory_retries():
    verdict = _replayed("gpu_memory_held_outside")
    assert verdict["category"] == "cuda"
    assert "cannot get GPU memory: pid 580 (not part of this job, `python3 -u gpu_memory_holder.py`) holds 135.8 GiB" \
        in verdict["summary"]
    assert "CUDA out of memory" in verdict["summary"] and "idle by design" not in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_gpu_memory_held_outside_explains_retries_that_build_the_model_on_the_cpu_first():
    # each attempt spends seconds on a CPU initialising weights, then fails to move them: the CPU
    # time is not progress, and the holder is still the cause (H200, 8 s window)
    verdict = _replayed("gpu_memory_held_cpu_first")
    assert verdict["category"] == "cuda", verdict["summary"]
    assert "cannot get GPU memory: pid 458 (not part of this job, `python3 -u gpu_memory_holder.py`)" \
        in verdict["summary"]
    assert "launch-bound" not in verdict["summary"]
    assert verdict["progress"]["state"] == "no progress seen"


def test_a_loop_bound_by_pageable_host_to_device_copies_says_so_with_the_pcie_rate():
    verdict = _replayed("gpu_output_advances_h2d_pcie")
    assert "host-to-device copies of pageable memory" in verdict["summary"] and "PCIe 8.3 GB/s" in verdict["summary"]
    assert verdict["progress"]["state"] == "making progress"


def test_a_healthy_gpu_job_that_writes_nothing_is_progress_with_silent_output():
    report = _replayed_report("gpu_healthy_silent")
    assert report["verdict"]["progress"]["state"] == "making progress"
    assert "silent-output" in [f["kind"] for f in report["findings"]]
    assert "shared with" not in report["verdict"]["summary"]


def _replayed_report(name):
    from stalldiag.capture import load_report
    from stalldiag.report import build_report
    return build_report(load_report(str(FIXTURES / "captures" / (name + ".json"))))


# the program as the capture recorded it: stale_moto_port.py was rj_stale_moto_port.py then
@pytest.mark.parametrize("name,program", [("flag_waiter_alone_leftover", "flag_waiter_alone.py leftover"),
                                          ("repro_stale_moto_port", "rj_stale_moto_port.py")])
def test_a_server_that_never_came_up_names_the_copy_an_earlier_run_left_on_its_port(name, program):
    verdict = _replayed(name)
    assert verdict["category"] == "network" and verdict["confidence"] == "medium", verdict["summary"]
    assert "a copy of this program outside the job (ppid 1," in verdict["summary"] and program in verdict["summary"]
    assert "listens on 127.0.0.1:" in verdict["summary"] and "Address already in use" in verdict["summary"]
