"""The kernel's own accounting in the capture (issue 13): quota throttling, stops, tracers,
the freezer, page faults on mapped data.  Every case is a real process put in that state."""
import os
import signal
import sys
import time

import pytest

from helpers import TRACER, inspect_json, rmdir_soon
from stalldiag import procfs

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups, ptrace)"), pytest.mark.alone]

CPU_CGROUP_V1 = "/sys/fs/cgroup/cpu/stalldiag-cpuquota"
CPU_CGROUP_V2 = "/sys/fs/cgroup/stalldiag-cpuquota"
FREEZER_V1 = "/sys/fs/cgroup/freezer"


def captured(report, pid):
    return next(p for p in report["capture"]["processes"] if p["pid"] == pid)


def states(proc):
    return [s[1] for t in proc["threads"] for s in t["samples"]]


@pytest.fixture
def cgroups_removed():
    """Remove the cgroups a test made, after its workloads are killed (requested before launch)."""
    made = []
    yield made
    for path in made:
        rmdir_soon(path)


def test_cpu_quota_throttling_is_in_the_capture(cgroups_removed, launch):
    cgroups_removed.extend([CPU_CGROUP_V1, CPU_CGROUP_V2])
    w = launch("cpu_quota_throttled.py", 10000, 100000, settle=0.5)
    report = inspect_json(w.pid, duration=3)
    proc = captured(report, w.pid)
    cgroup = proc["kernel"]["cgroup"]
    assert cgroup["path"].endswith("/stalldiag-cpuquota")
    cpu = cgroup["cpu"]
    assert cpu["quota_us"] == 10000 and cpu["period_us"] == 100000
    assert cpu["nr_periods"] > 10 and cpu["nr_throttled"] > 0 and cpu["throttled_ns"] > 0
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    wall_ns = report["capture"]["window"]["duration_s"] * 1e9
    # Every /proc sample may say "R"; the kernel says it got about a tenth of the wall time.
    assert 0 < main["sched"]["run_ns"] < 0.3 * wall_ns
    assert main["sched"]["slices"] > 0 and main["ctx"]["involuntary"] >= 0


def test_sigstop_is_state_T_without_a_tracer(launch):
    w = launch("sleep_loop.py")
    os.kill(w.pid, signal.SIGSTOP)
    time.sleep(0.2)
    proc = captured(inspect_json(w.pid), w.pid)
    assert states(proc) and set(states(proc)) == {"T"}
    assert "tracer" not in proc["kernel"]
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    assert main["sched"]["run_ns"] == 0 and main["ctx"] == {"voluntary": 0, "involuntary": 0}


def test_ptrace_stop_is_state_t_and_names_the_tracer(launch):
    w = launch("sleep_loop.py")
    tracer = launch(None, argv=[sys.executable, "-u", "-c", TRACER, str(w.pid)], settle=0.2)
    tracer_comm = procfs.comm(tracer.pid)
    try:
        proc = captured(inspect_json(w.pid), w.pid)
    finally:
        # The tracee's exit is reported to its tracer first: end the tracer before the
        # harness kills and reaps the workload, or that wait lasts as long as the tracer.
        tracer.popen.kill()
        tracer.popen.wait()
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    assert main["samples"] and {s[1] for s in main["samples"]} == {"t"}
    found = proc["kernel"]["tracer"]
    assert found["pid"] == tracer.pid
    assert found["comm"] == tracer_comm
    assert "-c" in found["cmdline"]


def _freeze_v1(path, state):
    with open(os.path.join(path, "freezer.state"), "w") as f:
        f.write(state)


@pytest.mark.skipif(not os.path.exists(FREEZER_V1 + "/cgroup.procs"), reason="no cgroup v1 freezer here")
def test_v1_freezer_frozen_is_in_the_capture(cgroups_removed, launch):
    path = os.path.join(FREEZER_V1, "stalldiag-freeze-%d" % os.getpid())
    cgroups_removed.append(path)
    w = launch("cpu_loop.py")
    os.makedirs(path, exist_ok=True)
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(w.pid))
        _freeze_v1(path, "FROZEN")
        time.sleep(0.3)
        proc = captured(inspect_json(w.pid), w.pid)
    finally:
        _freeze_v1(path, "THAWED")
    freezer = proc["kernel"]["cgroup"]["freezer"]
    assert freezer["state"] == "FROZEN" and freezer["path"] == "/" + os.path.basename(path)
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    assert main["sched"]["run_ns"] == 0 and "R" not in states(proc)


def test_mmap_on_slow_storage_shows_major_faults_and_the_mapped_file(launch, tmp_path):
    w = launch("mmap_slow_storage.py", tmp_path / "data", settle=1.0)
    report = inspect_json(w.pid, duration=2)
    proc = captured(report, w.pid)
    kernel = proc["kernel"]
    assert kernel["faults"]["majflt"] > 0
    mapping = kernel["data_mappings"][0]
    assert mapping["path"] == str(tmp_path / "data" / "mapped-dataset.bin")
    assert mapping["size"] == 32 * 1024 * 1024
    assert proc["io"]["read_bytes"] > 0 and proc["io"]["syscr"] < 50
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    # A page fault is not a syscall: state D, /proc/.../syscall "-1 ..." ("nosyscall"), a wchan.
    faulting = [s for s in main["samples"] if s[1] == "D" and s[2] == "nosyscall" and s[4]]
    assert faulting, main["samples"]


def _v2_mount():
    from stalldiag.probes import kernel_state
    mount = kernel_state.cgroup_mounts().get("v2")
    return mount[0] if mount and os.path.exists(mount[0] + "/cgroup.procs") else None


@pytest.mark.skipif(_v2_mount() is None, reason="no cgroup v2 hierarchy here")
def test_v2_freezer_frozen_is_in_the_capture(cgroups_removed, launch):
    """The v2 core freezer (cgroup.freeze) works on hybrid hosts too, next to the v1 one."""
    path = os.path.join(_v2_mount(), "stalldiag-freeze-%d" % os.getpid())
    cgroups_removed.append(path)
    w = launch("cpu_loop.py")
    os.makedirs(path, exist_ok=True)
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(w.pid))
        with open(os.path.join(path, "cgroup.freeze"), "w") as f:
            f.write("1")
        time.sleep(0.3)
        proc = captured(inspect_json(w.pid), w.pid)
    finally:
        with open(os.path.join(path, "cgroup.freeze"), "w") as f:
            f.write("0")
    freezer = proc["kernel"]["cgroup"]["freezer"]
    assert freezer["state"] == "frozen" and freezer["path"] == "/" + os.path.basename(path)
    main = next(t for t in proc["threads"] if t["tid"] == w.pid)
    assert main["sched"]["run_ns"] == 0 and "R" not in states(proc)
