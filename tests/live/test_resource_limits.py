"""The job's resources: the limits on its processes and the neighbours on its CPUs and disks,
on real workloads (root and cgroup v1 for the container limits).  The readers on saved files of
a cgroup v2 host are in tests/unit/test_resource_readers.py, the GPU cases captured on an H200 in
tests/replay/test_resource_captures.py."""
import glob
import os

import pytest

from helpers import inspect_json

pytestmark = pytest.mark.alone


def _cgroup_v1(controller):
    return os.geteuid() == 0 and os.path.exists("/sys/fs/cgroup/%s/tasks" % controller)


@pytest.fixture
def leftover_cgroups():
    yield
    for path in glob.glob("/sys/fs/cgroup/*/stalldiag_test_*"):
        try:
            os.rmdir(path)
        except OSError:
            pass


def test_a_job_pinned_to_one_cpu_names_its_affinity_not_oversubscription(launch, tmp_path):
    job = launch("resource_cpu_affinity.py", tmp_path / "steps", settle=1.0)
    report = inspect_json(job.pid, "--children", duration=4)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "may use 1 of the host's %d CPUs (its CPU affinity {0})" % os.cpu_count() in verdict["summary"]
    limits = report["capture"]["resources"]["processes"][str(job.pid)]
    assert limits["affinity"] == [0]


def test_a_neighbour_on_the_same_cpu_is_named_with_its_command(launch, tmp_path):
    burner = launch("resource_cpu_burner.py", 0, settle=0.2)
    job = launch("resource_cpu_pinned_job.py", tmp_path / "steps", settle=1.0)
    report = inspect_json(job.pid, "--children", duration=4)
    verdict = report["verdict"]
    assert verdict["category"] == "cpu", verdict["summary"]
    assert "shared with pid %d (not part of this job" % burner.pid in verdict["summary"]
    assert "resource_cpu_burner.py" in verdict["summary"]


@pytest.mark.skipif(not _cgroup_v1("memory"), reason="needs root and the cgroup v1 memory controller")
def test_a_reader_under_a_full_memory_limit_rereads_from_disk(launch, leftover_cgroups, tmp_path):
    job = launch("resource_memory_limited_reader.py", tmp_path / "data.bin", settle=1.5)
    report = inspect_json(job.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert "memory limit of 64 MiB" in verdict["summary"] and "read from disk again" in verdict["summary"]


@pytest.mark.skipif(not _cgroup_v1("blkio"), reason="needs root and the cgroup v1 blkio controller")
def test_a_reader_under_a_blkio_throttle_names_the_throttle(launch, leftover_cgroups):
    data = "/var/tmp/stalldiag_test_throttled.bin"   # a real disk: tmpfs has no block device
    job = launch("resource_io_throttled_reader.py", data, settle=1.5)
    report = inspect_json(job.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert "its cgroup throttles disk" in verdict["summary"] and "4.0 MB/s" in verdict["summary"]


@pytest.mark.skipif(not _cgroup_v1("pids"), reason="needs root and the cgroup v1 pids controller")
def test_a_spawner_in_a_full_pids_cgroup_names_the_limit_and_who_holds_it(leftover_cgroups, launch):
    job = launch("resource_pids_limited_spawner.py", settle=1.5)
    report = inspect_json(job.pid, "--children", duration=3)
    verdict = report["verdict"]
    assert verdict["category"] == "subprocess", verdict["summary"]
    assert "Resource temporarily unavailable" in verdict["summary"]
    assert "holds 24 of the 24 tasks (processes and threads) its pids.max allows" in verdict["summary"]
    assert "21 of them threads of pid %d (of this job" % job.pid in verdict["summary"]
    pids = report["capture"]["resources"]["processes"][str(job.pid)]["cgroup"]["pids"]
    assert pids["limit"] == 24 and pids["limit_path"] == "/stalldiag_test_%d" % job.pid
    assert pids["members"][0]["pid"] == job.pid and pids["members"][0]["threads"] == 21


def test_a_loop_retrying_an_open_at_its_file_limit_names_the_limit(launch, tmp_path):
    job = launch("resource_fd_limit_retry.py", tmp_path / "shards", settle=1.0)
    report = inspect_json(job.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert "Too many open files" in verdict["summary"]
    assert "open files its RLIMIT_NOFILE allows" in verdict["summary"]
    files = report["capture"]["resources"]["processes"][str(job.pid)]["open_files"]
    assert files["limit"] == 64 and files["open"] >= 60
