"""Hot code named from recorded captures (issue 33). pytorch/examples' ImageNet training with
--dummy on an H200, 4 DataLoader workers at 100% of a core each: the report names the workers'
own hot code (torch.manual_seed per sample in FakeData), never the
training loop's line they inherited from their parent at fork."""
from helpers import CAPTURES
from stalldiag.capture import load_report
from stalldiag.report import build_report


def test_the_workers_hot_code_is_named_not_the_loop_they_inherited():
    report = build_report(load_report(str(CAPTURES / "gpu_imagenet_dummy_workers.json")))
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "DataLoader workers" in (report["chain_text"] or ""), report["chain_text"]
    summary = verdict["summary"]
    assert "its CPU goes to FakeData.__getitem__" in summary and "torch.manual_seed" in summary, summary
    assert "enumerate(train_loader)" not in summary, summary
    starved = [f for f in report["findings"] if f["kind"] == "dataloader-starved"]
    assert starved and "4 workers" in starved[0]["summary"], report["findings"]


def test_a_trainer_kept_from_its_cpus_still_names_its_hot_code():
    """A healthy Trainer run whose two CPUs two busy loops outside the job share (recorded here, as
    CI's loaded machine gave it): the runnable-but-waiting sentence leads, and the hot code (the
    model's forward and backward) follows it, not only the script's `<module>` line."""
    report = build_report(load_report(str(CAPTURES / "trainer_cpu_shared_with_neighbours.json")))
    summary = report["verdict"]["summary"]
    assert report["verdict"]["category"] == "cpu", summary
    assert "waiting for a CPU" in summary and "its CPU goes to" in summary, summary
    hot = summary.split("its CPU goes to", 1)[1]
    assert "forward" in hot and "_engine_run_backward" in hot, summary
