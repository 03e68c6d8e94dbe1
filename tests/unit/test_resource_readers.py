"""The resource probe's readers: the limits of a cgroup v2 host from its saved files, CPU lists and
host counters, this host read live, and a program's twins and their listening sockets.  The
limits on real workloads are tested in tests/live/test_resource_limits.py.
"""
import os

from helpers import FIXTURES
from stalldiag.probes import resources

V2_HOST = FIXTURES / "hosts" / "cgroup_v2"


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
