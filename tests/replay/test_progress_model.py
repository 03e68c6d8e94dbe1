"""The one progress model (diagnosis/progress.py): a thread, a window, a watch interval."""
import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.diagnosis.graph import WaitGraph
from stalldiag.diagnosis.progress import CPU_WORK, GPU_WORK, INTERVAL_CPU_S, frozen_stack, interval_progress, stuck
from stalldiag.diagnosis.text import clip, clip_items
from stalldiag.report import build_report


def replay(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


def graph(name):
    return WaitGraph(load_report(str(CAPTURES / (name + ".json"))))


def never():
    raise AssertionError("called although an earlier signal decided")


@pytest.mark.parametrize("args,moved,why", [
    ((4096, 0, never, 0.0, never), True, "bytes read/written"),
    ((0, 10, never, 0.0, never), True, "output grew"),
    ((0, 0, lambda: GPU_WORK, 0.0, never), True, "GPU"),
    ((0, 0, lambda: None, INTERVAL_CPU_S, lambda: True), True, "stacks moved"),
    ((0, 0, lambda: None, INTERVAL_CPU_S, lambda: False), False, "did not move"),
    ((0, 0, lambda: GPU_WORK - 1, INTERVAL_CPU_S / 2, never), False, "no CPU, I/O"),
])
def test_the_watch_interval_asks_only_what_it_needs(args, moved, why):
    got, text = interval_progress(*args)
    assert got is moved and why in text


def test_a_thread_stuck_in_a_wait_all_window_is_stuck_and_a_computing_one_is_not():
    deadlock = graph("deadlock")
    assert [v.name for v in deadlock.views if stuck(v)] == [v.name for v in deadlock.views if v.kind == "lock"]
    busy = graph("ddp_gloo_healthy_caught_asleep")   # caught in futex in 80% of samples, on CPU 46%
    main = next(v for v in busy.views if v.is_main and v.pid == busy.focus_thread().pid)
    assert not stuck(main)


@pytest.mark.parametrize("name,state", [
    ("deadlock", "no progress seen"),
    ("ddp_gloo_healthy_caught_asleep", "making progress"),
    ("cpu_loop", "cannot tell"),                     # CPU in one function, no syscall, no output
    ("runaway_regex", "no progress seen"),              # CPU, but one call whose stack never moved
    ("retry_connect_refused_exact", "no progress seen"),  # it writes a log line every attempt
    ("gpu_ddp_stopped_rank", "no progress seen"),
])
def test_the_window_verdict(name, state):
    assert replay(name)["verdict"]["progress"]["state"] == state


def test_a_frozen_stack_is_one_stack_to_the_line_and_compiling_is_exempt():
    regex = graph("runaway_regex")
    parser = next(v for v in regex.views if v.name == "header-parser")
    assert frozen_stack(parser) and parser.cpu_seconds >= CPU_WORK
    assert not any(frozen_stack(v) for v in graph("cpu_loop").views)
    assert not any(frozen_stack(v) for v in graph("jax_compile").views if v.kind == "compile")


def test_output_that_advances_is_progress_while_the_gpu_waits_on_pageable_copies():
    """Recorded on an H200: a loop bound by host-to-device copies of pageable batches, its thread
    spin-waiting in the CUDA driver, the GPU at SM 0.2%, prints a step line each step into the
    file its stdout is.  That output advancing is progress (it was 'no progress seen')."""
    report = replay("gpu_output_advances_h2d")
    progress = report["verdict"]["progress"]
    assert progress["state"] == "making progress", progress
    assert any("gpu_output_advances_h2d.log" in line and "pid 453 wrote" in line for line in progress["evidence"]), progress


def test_samples_with_no_python_frames_do_not_hide_the_line_a_thread_spins_at():
    # py-spy sees a 3.13 thread under a tight loop with no frames now and then; recorded on 3.13
    # with one such sample.  Were those samples the most common, the line must still be said.
    capture = load_report(str(CAPTURES / "spin_on_queue_empty_py313.json"))
    main = next(t for p in capture["processes"] for t in p["threads"] if t["tid"] == p["pid"])
    empty = capture["stacks"].index([])
    main["stack_samples"] = [[index, 5 if index == empty else count] for index, count in main["stack_samples"]]
    summary = build_report(capture)["verdict"]["summary"]
    assert "spin_on_queue_empty.py:21" in summary and "it spins" in summary, summary


def test_a_commit_per_row_whose_samples_caught_it_on_a_cpu_is_storage_bound_by_the_schedulers_account():
    """Sampled at 5 Hz, a thread that syncs 11,000 times a second was on a CPU in 10 of 16 samples;
    schedstat says on a CPU or runnable 44% of the window.  Its time asleep, shared out as its
    off-CPU samples were (all 6 in storage waits), is storage: io, making progress (was cpu)."""
    verdict = replay("commit_per_row_samples_on_cpu")["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert verdict["progress"]["state"] == "making progress"
    assert "on CPU or runnable 44% of the window" in verdict["summary"], verdict["summary"]


@pytest.mark.parametrize("state,syscall,wchan", [
    ("D", "fdatasync", "submit_bio_wait"),
    ("D", "running", "submit_bio_wait"),   # /proc's two reads, one running, one in D
    ("D", "fsync", "jbd2_log_wait_commit"),
    ("D", "sync_file_range", "folio_wait_bit"),
])
def test_a_thread_in_d_state_syncing_to_storage_waits_on_storage(state, syscall, wchan):
    from stalldiag.diagnosis.threads import sample_kind
    assert sample_kind(state, syscall, None, wchan) == "io"


def test_a_busy_gpu_is_said_first_when_the_host_thread_sits_in_one_line():
    """H200: a silent matmul loop whose host thread spends the window in one line
    (torch.cuda.synchronize spin-waits) while the GPU computes: the run progresses, and the line
    says so by the GPU, with the host's blind spot after it, not before."""
    progress = replay("gpu_silent_host_in_one_line")["verdict"]["progress"]
    assert progress["state"] == "making progress"
    assert progress["evidence"][0].startswith("GPU 0 busy")
    assert any(e.startswith("cannot tell whether") for e in progress["evidence"][1:])
    assert progress["brief"].startswith("GPU 0 busy") and "cannot tell" not in progress["brief"][:40]


@pytest.mark.parametrize("text, limit, expected", [
    ("short", 10, "short"),
    ("a sentence that is far too long to keep", 20, "a sentence that is…"),
    ("GPU 0 has 139.80 GiB", 15, "GPU 0 has…"),
])
def test_clip_cuts_at_a_word_and_says_so(text, limit, expected):
    assert clip(text, limit) == expected
    assert len(clip(text, limit)) <= limit


def test_clip_items_keeps_whole_items_and_counts_the_rest():
    assert clip_items(["one", "two", "three"], 9) == "one; two (+1 more)"
    assert clip_items(["x" * 50 + " tail", "two"], 20).endswith("… (+1 more)")
    assert clip_items([], 10) == ""


def test_a_window_inside_one_sleep_that_ends_soon_cannot_tell():
    # a blocking time.sleep between async retries, 6 s left of it: the next step was not seen
    progress = build_report(load_report(str(CAPTURES / "repro_r34_14_async_retry_time_sleep.json")))["verdict"]["progress"]
    assert progress["state"] == "cannot tell", progress
    assert "slept through the whole window in one sleep, which ends in 6 s" in progress["evidence"][0]


@pytest.mark.parametrize("name", ["gpu_nccl_fr_fifo_one_rank", "sleep_loop"])
def test_a_sleep_with_minutes_left_or_a_loop_of_short_sleeps_is_no_progress(name):
    # a rank held in a sleep with 197 s left; a poll loop that wakes every half second
    progress = build_report(load_report(str(CAPTURES / (name + ".json"))))["verdict"]["progress"]
    assert progress["state"] == "no progress seen", progress
