"""The configuration rows on saved captures (recorded by tools/record_captures.py from the
workloads of tests/live/test_configuration.py), and the knob table's own rules."""
import pytest

from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.knowledge import knobs
from stalldiag.report import build_report


def report(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


@pytest.mark.parametrize("name,category,kind,words", [
    ("omp_threads_oversubscribed", "cpu", "threads-oversubscribed", "OMP_NUM_THREADS"),
    ("cpu_loop_dev_mode", "cpu", "debug-mode", "-X dev"),
    ("compile_settings_slow", "compilation", "compile-settings", "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1"),
])
def test_a_knob_is_named_beside_the_verdict_it_explains(name, category, kind, words):
    found = report(name)
    assert found["verdict"]["category"] == category, found["verdict"]["summary"]
    said = [f["summary"] for f in found["findings"] if f["kind"] == kind]
    assert said and words in said[0], [f["kind"] for f in found["findings"]]


def test_a_knob_is_only_a_hint_under_a_verdict_it_does_not_explain():
    # the compile settings are set in the compile capture; under a cpu verdict they qualify nothing
    found = report("cpu_loop_dev_mode")
    assert not any(f["kind"] == "compile-settings" for f in found["findings"])


def test_knob_values_and_flags():
    assert [k.name for k, _v in knobs.set_knobs({"CUDA_LAUNCH_BLOCKING": "0", "NCCL_DEBUG": "INFO",
                                                 "OMP_NUM_THREADS": "x"})] == ["NCCL_DEBUG"]
    assert knobs.interpreter_flags(["/usr/bin/python3.11", "-X", "dev", "-Xtracemalloc=5", "-u", "train.py", "-u"]) \
        == ["-X dev", "-X tracemalloc", "-u"]
    assert knobs.interpreter_flags(["bash", "-u"]) == []
