"""knowledge/gpu_sinks.py: why a GPU waits, read from one stack sample of the thread that feeds it."""
from stalldiag.knowledge.gpu_sinks import BY_NAME, SINKS, sink_of_frames

SITE = "/usr/lib/python3.11/site-packages/"


def test_each_sink_is_recognised_by_its_own_frames():
    assert sink_of_frames([("empty_cache", SITE + "torch/cuda/memory.py", 230)]).name == "empty-cache"
    assert sink_of_frames([("do_bench", SITE + "triton/testing.py", 100)]).name == "autotune"
    assert sink_of_frames([("format_stack", SITE + "torch/fx/traceback.py", 503)]).name == "anomaly-detection"
    assert sink_of_frames([("synchronize", SITE + "torch/cuda/__init__.py", 1220)]).name == "host-sync"


def test_native_frames_name_a_sink():
    assert sink_of_frames([("cudaStreamSynchronize", "libcudart.so.12", 0)]).name == "host-sync"
    assert sink_of_frames([("cudnnFindConvolutionForwardAlgorithm", "libcudnn.so.9", 0)]).name == "autotune"


def test_the_users_line_names_a_sync_only_when_it_is_given():
    frames = [("train", "/home/u/train.py", 40)]
    assert sink_of_frames(frames) is None
    assert sink_of_frames(frames, "    running += loss.item()").name == "host-sync"
    assert sink_of_frames(frames, "    out = model(x)") is None


def test_rows_have_a_category_and_say_where_they_were_read():
    assert {s.category for s in SINKS} <= {"cuda", "compilation"}
    assert all(s.source and s.meaning for s in SINKS)
    assert BY_NAME["autotune"].category == "compilation"
