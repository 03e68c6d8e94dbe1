"""What issue 35 could run on the one-GPU H200 (no second GPU was lent): one NCCL rank under
torchrun, found without a PID while it trains, and its Flight Recorder read through the per-rank
FIFO that TORCH_NCCL_DEBUG_INFO_PIPE_FILE makes (the dump NCCL writes on demand)."""
from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def replay(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


def test_a_healthy_ddp_rank_found_without_a_pid_is_gpu_bound_and_progressing():
    report = replay("gpu_nccl_ddp_healthy_no_pid")
    verdict = report["verdict"]
    assert report["capture"]["request"]["pid"] is None or report["capture"]["request"].get("discovered"), \
        report["capture"]["request"]
    assert verdict["category"] == "cuda" and "GPU-bound" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] == "making progress", verdict["progress"]


def test_the_nccl_flight_recorder_is_read_through_its_fifo():
    report = replay("gpu_nccl_fr_fifo_one_rank")
    record = report["capture"]["collectives"]
    assert "fifo" in record["armed"], record["armed"]
    [rank] = record["ranks"]
    assert rank["source"] == "fifo" and rank["backend"] == "nccl", rank
    assert rank["groups"][0]["last_completed"] == rank["groups"][0]["last_enqueued"] == 44
    assert {e["op"] for e in rank["entries"]} == {"all_reduce"}
    assert record["read_s"] < 5
