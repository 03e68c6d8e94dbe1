"""The table of known native CPU sinks (knowledge/native.py) and the native self time of a thread
(diagnosis/hot.native_hot)."""
from types import SimpleNamespace

import pytest

from stalldiag.diagnosis.hot import native_hot, native_text
from stalldiag.knowledge import native


@pytest.mark.parametrize("function,library,words", [
    ("sre_ucs1_match", "/usr/lib/libpython3.11.so.1.0", "regex"),
    ("_PyEval_EvalFrameDefault", "/usr/bin/python3.12", "bytecode"),
    ("gomp_team_barrier_wait_end", "/usr/lib/libgomp.so.1", "OpenMP"),
    ("at::native::add_kernel", "/x/libtorch_cpu.so", "ATen"),
    ("cudaStreamSynchronize", "/x/libcudart.so.12", "wait for the GPU"),
    ("0x7f00deadbeef", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "CUDA driver"),
    ("mystery", "/opt/lib/libunknown.so", None),
])
def test_a_sink_is_named_by_its_symbol_else_its_library(function, library, words):
    said = native.sink(function, library)
    assert (said is None) if words is None else (words in said), said


def test_native_self_time_is_the_innermost_named_function_below_the_python_frame():
    regex = (("0x7f14a7f8b874", "/lib/libc.so.6", 0), ("sre_ucs1_match", "/lib/libpython3.11.so.1.0", 0),
             ("_sre_SRE_Pattern_match", "/lib/libpython3.11.so.1.0", 0), ("<module>", "/tmp/hot.py", 5))
    view = SimpleNamespace(native_stacks=[(regex, 3), (regex[1:], 1)])
    hot = native_hot(view)
    assert (hot.function, hot.entry, hot.samples, hot.share) == ("sre_ucs1_match", "_sre_SRE_Pattern_match", 4, 1.0)
    assert "regex" in native_text(hot) and "libpython3.11" in native_text(hot)


def test_no_snapshot_no_claim():
    assert native_hot(SimpleNamespace(native_stacks=[])) is None
    unnamed = ((("0x1", "/lib/libc.so.6", 0), ("f", "/tmp/x.py", 1)), 2)
    assert native_hot(SimpleNamespace(native_stacks=[unnamed])) is None
