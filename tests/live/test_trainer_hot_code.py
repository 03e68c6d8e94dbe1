"""A healthy Hugging Face Trainer run on the CPU (issue 33): the CPU verdict names the code its CPU
goes to (the backward under the Trainer's step), never the script's `<module>` line."""
import pytest

from helpers import inspect_json

pytestmark = pytest.mark.live

try:
    import transformers  # noqa: F401
    import accelerate  # noqa: F401
    HAVE_HF = True
except ImportError:
    HAVE_HF = False


@pytest.mark.alone
@pytest.mark.skipif(not HAVE_HF, reason="needs transformers and accelerate (requirements-test.txt)")
def test_a_healthy_trainer_run_names_its_hot_code(launch):
    w = launch("hf_trainer_cpu_healthy.py", settle=1.0)
    # (py-spy is niced so as never to slow its target: a loaded machine gives it few samples of a
    # busy process, and a hot path needs 3; the report says when its samples were thin, and a
    # second, longer window gets them)
    report = inspect_json(w.pid, duration=8)
    if "its CPU goes to" not in report["verdict"]["summary"] and _thin(report, w.pid):
        report = inspect_json(w.pid, duration=20)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert verdict["progress"]["state"] == "making progress", verdict["progress"]
    summary = verdict["summary"]
    assert "its CPU goes to" in summary, (summary, report.get("limitations"))
    hot = summary.split("its CPU goes to", 1)[1]
    assert not hot.lstrip().startswith("<module>"), summary
    assert any(word in hot for word in ("backward", "forward", "training_step", "Linear", "attention")), summary


def _thin(report, pid):
    """The report says its Python stacks of the trainer were fewer than asked: py-spy started late,
    was starved of CPU, was slowed, stopped late, or took one snapshot of a process it found idle at
    the window's start (CI's loaded machine has done each)."""
    said = ("py-spy took only", "not measured", "one py-spy snapshot", "rate (asked for", "did not stop within")
    return any(any(words in line for words in said) for line in report.get("limitations") or [])
