"""pytorch/examples imagenet/main.py --dummy (resnet50, 4 DataLoader workers) on an H200, inspected
three times while it trained (tools/gpu_imagenet.sh, issue 40): a GPU fed by 4 workers at a core
each.  Every time the verdict is the input pipeline: the chain goes from the training loop, which
waits for batches (in about half its samples; the rest is the step), to the workers, and names
their hot code, FakeData.__getitem__.  Before, two of the three read as a lock held by the idle
autograd device thread, or as the main thread computing."""
import pytest

from helpers import CAPTURES, ROOT

import sys
sys.path.insert(0, str(ROOT))
from stalldiag.capture import load_report  # noqa: E402
from stalldiag.report import build_report  # noqa: E402


@pytest.mark.parametrize("run", [1, 2, 3])
def test_imagenet_dummy_reads_as_its_input_pipeline(run):
    report = build_report(load_report(str(CAPTURES / ("gpu_imagenet_h200_%d.json" % run))))
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "DataLoader workers" in report["chain_text"], report["chain_text"]
    assert verdict["pid"] != verdict["tid"] or verdict["pid"] != 470, verdict["summary"]   # not the loop
    assert "FakeData.__getitem__" in verdict["summary"], verdict["summary"]
    assert verdict["progress"]["state"] != "no progress seen"
