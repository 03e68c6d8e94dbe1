"""The job's resources: the limits on its processes and the neighbours on its CPUs and disks,
on real workloads (root and cgroup v1 for the container limits), and the readers on saved files
of a cgroup v2 host."""
import glob
import os

import pytest

from helpers import FIXTURES, inspect_json
from stalldiag.probes import resources

V2_HOST = FIXTURES / "hosts" / "cgroup_v2"


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


# -- the readers, on saved files of a cgroup v2 host -------------------------------------------

def _v2(name):
    return (V2_HOST / name).read_text()


def test_cgroup_v2_limits_are_read_from_the_cgroup_and_its_ancestors():
    mounts = resources.cgroup_mounts(_v2("mountinfo").replace("/sys/fs/cgroup", str(V2_HOST / "sys_fs_cgroup")))
    limits = resources.cgroup_limits(_v2("proc_cgroup"), mounts)
    assert limits["version"] == 2
    assert limits["cpus"] == [0]
    assert limits["cpu_quota"] == 0.5
    memory = limits["memory"]
    assert memory["limit"] == 256 << 20 and memory["limit_path"] == "/stalldiag.slice"
    assert memory["usage"] is not None and memory["file"] is not None and memory["pgmajfault"] is not None
    assert limits["io"] and all("rbps" in rule for rule in limits["io"].values())
    # pids.max set on the slice, "max" on the job's own cgroup: the slice's binds; far from full,
    # so its members are not read
    assert limits["pids"] == {"limit": 64, "current": 12, "limit_path": "/stalldiag.slice", "members": []}


def test_cpu_lists_and_host_counters_parse():
    assert resources.cpu_list("0-2,5") == [0, 1, 2, 5]
    assert resources.cpu_list("") is None and resources.cpu_list("x") is None
    times = resources.cpu_times("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 40 0 0 0 0 0 0\n")
    assert times == {0: (10, 50), 1: (10, 50)}
    assert resources.meminfo("MemTotal: 100 kB\nMemAvailable: 50 kB\nCached: 10 kB\n")["available"] == 50 * 1024


def test_the_probe_reads_this_host_and_names_no_process_of_ours_a_neighbour():
    probe = resources.ResourceProbe()
    probe.start([os.getpid()])
    x = 0
    for i in range(200000):
        x += i
    probe.stop([os.getpid()])
    found = probe.to_dict()
    assert found["available"] and found["host"]["cpus"] == len(found["host"]["cpu_busy"]) or found["host"]["cpus"]
    assert str(os.getpid()) in found["processes"]
    assert all(n["pid"] != os.getpid() for n in found["neighbours"])


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


def test_a_loop_retrying_an_open_at_its_file_limit_names_the_limit(launch, tmp_path):
    job = launch("resource_fd_limit_retry.py", tmp_path / "shards", settle=1.0)
    report = inspect_json(job.pid, duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "io", verdict["summary"]
    assert "Too many open files" in verdict["summary"]
    assert "open files its RLIMIT_NOFILE allows" in verdict["summary"]
    files = report["capture"]["resources"]["processes"][str(job.pid)]["open_files"]
    assert files["limit"] == 64 and files["open"] >= 60


def test_a_twin_is_a_process_running_the_same_python_program_and_its_listeners_are_read():
    import os
    import socket
    from stalldiag.probes.resources import _listening_of, listening_sockets, program_of
    assert program_of(["/usr/bin/python3", "-u", "/srv/train.py", "--lr", "1"]) == "train.py"
    assert program_of(["python3.11", "-m", "torch.distributed.run", "x.py"]) == "-m torch.distributed.run"
    assert program_of(["python3", "-c", "pass"]) is None and program_of(["bash", "train.py"]) is None
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = "127.0.0.1:%d" % server.getsockname()[1]
        assert address in listening_sockets().values()
        assert address in _listening_of(os.getpid(), listening_sockets())


# the program as the capture recorded it: stale_moto_port.py was rj_stale_moto_port.py then
@pytest.mark.parametrize("name,program", [("flag_waiter_alone_leftover", "flag_waiter_alone.py leftover"),
                                          ("repro_stale_moto_port", "rj_stale_moto_port.py")])
def test_a_server_that_never_came_up_names_the_copy_an_earlier_run_left_on_its_port(name, program):
    verdict = _replayed(name)
    assert verdict["category"] == "network" and verdict["confidence"] == "medium", verdict["summary"]
    assert "a copy of this program outside the job (ppid 1," in verdict["summary"] and program in verdict["summary"]
    assert "listens on 127.0.0.1:" in verdict["summary"] and "Address already in use" in verdict["summary"]
