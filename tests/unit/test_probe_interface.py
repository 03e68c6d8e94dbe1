"""The probe interface (probes/base.py), the one /proc reader (procfs.py), NVML opened once, and
errors that carry the pid.  The sections a capture is built from are held against a saved one in
tests/replay/test_capture_schema.py; an inspection of pid 1 with probes that break is
tests/live/test_broken_probes.py."""
import ast
import os
import re
import sys
import types

import pytest

from helpers import ROOT
from stalldiag import errors, procfs, targets
from stalldiag.probes import base, gpu
from stalldiag.session import default_probes

PACKAGE = ROOT / "stalldiag"   # tests/unit is one folder deeper than the file was written for


# --- the interface -----------------------------------------------------------------------------

def test_every_probe_is_one_of_the_interface_with_a_typed_section_and_a_name_of_its_own():
    probes = default_probes()
    assert len({p.name for p in probes}) == len(probes)
    for probe in probes:
        assert isinstance(probe, base.Probe)
        section = probe.Section()
        assert isinstance(section, base.Section) and section.limitations == []
        assert "__dataclass_fields__" in type(section).__dict__, type(section).__name__


def test_a_probe_that_raises_is_turned_off_and_its_section_says_what_is_missing():
    class Broken(base.Probe):
        name = "broken"

        def tick(self, ctx):
            raise KeyError("x")

    probe = Broken()
    assert base.run_guarded(probe, "tick", None) is None
    assert probe._failed == "KeyError in tick(): 'x'"
    assert base.run_guarded(probe, "tick", None) is None     # not asked again
    assert probe.failed(probe._failed).limitations == ["broken: not measured (the probe failed: KeyError in tick(): 'x')"]


# --- one /proc reader ----------------------------------------------------------------------------

# a /proc path or the format of one ("/proc/%d/fd/%d", "/proc/self/status", "/proc/locks"); a bare
# "/proc" or "/proc/" is a prefix some probes skip, and a message has spaces
PROC_PATH = re.compile(r"^/proc/[^ ]+$")


def test_only_procfs_builds_proc_paths():
    """No module but procfs.py (and the diagnosis and renderers, which read no file) holds a /proc
    path: the others ask procfs to read it.  Messages may still name /proc files."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "procfs.py" or rel.startswith(("diagnosis/", "render/", "knowledge/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and PROC_PATH.match(node.value):
                offenders.append("%s:%d %s" % (rel, node.lineno, node.value))
    assert not offenders, offenders


def test_procfs_errors_carry_the_pid_tid_and_file():
    pid = _free_pid()
    with pytest.raises(procfs.ProcessGone) as gone:
        procfs.stat(pid)
    assert gone.value.pid == pid and gone.value.path == "/proc/%d/stat" % pid
    assert isinstance(gone.value, errors.NoSuchProcess) and gone.value.exit_code == 3
    with pytest.raises(procfs.ProcessGone) as gone:
        procfs.read(os.getpid(), "stat", 1 << 30)
    assert (gone.value.pid, gone.value.tid) == (os.getpid(), 1 << 30)
    assert issubclass(procfs.AccessDenied, procfs.ProcfsError) and errors.AccessDenied(7).exit_code == 5
    assert str(errors.AccessDenied(7, path="/proc/7/syscall")) == "/proc/7/syscall: permission denied"
    assert str(errors.NoSuchProcess(7, name="python")) == "pid 7 (python): no such process"


def test_a_refused_target_names_its_pid_and_keeps_its_one_line_and_exit_code():
    with pytest.raises(errors.NoSuchProcess) as missing:
        targets.check_target(_free_pid())
    assert missing.value.exit_code == 3 and str(missing.value).startswith("no process with PID")
    with pytest.raises(errors.BadTarget) as itself:
        targets.check_target(os.getpid())
    assert itself.value.pid == os.getpid() and itself.value.exit_code == 4
    if procfs.cmdline(2) == [] and procfs.stat(2)["comm"] == "kthreadd":
        with pytest.raises(errors.BadTarget) as kernel:
            targets.check_target(2)
        assert (kernel.value.pid, kernel.value.name) == (2, "kthreadd") and "kernel thread" in str(kernel.value)


def _free_pid():
    return (1 << 22) + 1   # above PID_MAX_LIMIT: never a process


# --- NVML opened once ------------------------------------------------------------------------------

def test_nvml_is_initialised_in_one_place():
    calls = [(p.relative_to(PACKAGE).as_posix(), n) for p in PACKAGE.rglob("*.py")
             for n in [p.read_text().count("nvmlInit(")] if n]
    assert calls == [("probes/gpu.py", 1)], calls


def test_one_nvml_serves_discovery_and_the_gpu_probe_and_is_shut_down_once(monkeypatch):
    from stalldiag import discovery
    counts = {"init": 0, "shutdown": 0}
    fake = types.SimpleNamespace(
        nvmlInit=lambda: counts.__setitem__("init", counts["init"] + 1),
        nvmlShutdown=lambda: counts.__setitem__("shutdown", counts["shutdown"] + 1),
        nvmlDeviceGetCount=lambda: 0)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(gpu, "DRIVER_PATHS", ("/",))
    nv = gpu.Nvml()
    monkeypatch.setattr(discovery, "NVML", nv)
    assert discovery._gpu_memory() == {}
    probe = gpu.GpuProbe(nvml=nv)
    probe.start(types.SimpleNamespace(t0=0.0))
    section = probe.stop(None)
    assert section.limitations == ["GPU: not available (NVML reports no GPU)"]
    assert counts == {"init": 1, "shutdown": 0}
    nv.close()
    nv.close()
    assert counts == {"init": 1, "shutdown": 1}


def test_without_a_driver_nvml_is_not_loaded_and_says_why(monkeypatch):
    monkeypatch.setattr(gpu, "DRIVER_PATHS", ("/nonexistent/nvidiactl",))
    nv = gpu.Nvml()
    assert nv.open() is None and nv.reason == "no NVIDIA driver on this host (none of /nonexistent/nvidiactl)"
