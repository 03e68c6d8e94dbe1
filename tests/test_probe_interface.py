"""The probe interface (probes/base.py), the one /proc reader (procfs.py), NVML opened once, and
errors that carry the pid: units, and one short inspection of pid 1 with a probe that breaks."""
import ast
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest

from conftest import CAPTURES
from stalldiag import capture, errors, procfs, targets
from stalldiag.config import Config
from stalldiag.probes import base, gpu
from stalldiag.session import Inspection, default_probes

PACKAGE = Path(__file__).resolve().parent.parent / "stalldiag"


# --- the interface -----------------------------------------------------------------------------

def test_every_probe_is_one_of_the_interface_with_a_typed_section_and_a_name_of_its_own():
    probes = default_probes()
    assert len({p.name for p in probes}) == len(probes)
    for probe in probes:
        assert isinstance(probe, base.Probe)
        section = probe.Section()
        assert isinstance(section, base.Section) and section.limitations == []
        assert "__dataclass_fields__" in type(section).__dict__, type(section).__name__


def test_the_sections_write_every_key_of_a_capture_and_build_keeps_the_saved_order():
    """What the probes write, and nothing else, is what a saved capture of this schema holds, in its
    order, so the JSON of a capture is the one it was before the interface."""
    written = {}
    for probe in default_probes():
        written.update(_written_by(probe.Section(), processes=[]))
    assert set(written) == {key for key, _default in capture.PROBE_KEYS} | {"permission_denied"}
    saved = json.loads((CAPTURES / "thread_died_poll.json").read_text())["capture"]
    built = capture.build({"hostname": "h"}, {"pid": 1}, {"start": 0}, [p.Section() for p in default_probes()])
    # `collectives` (the ranks' Flight Recorders, issue 34) came later: an optional key, None where
    # it was not read, so captures without it stay of this schema
    assert [k for k in built if k != "collectives"] == list(saved)
    assert built["collectives"] is None
    assert built["resources"] == {"available": False, "reason": "not measured"} and built["limitations"] == []


def _written_by(section, processes):
    cap = {"processes": list(processes), "request": {"pid": 1}}
    before = dict(cap)
    section.write(cap)
    return {k: v for k, v in cap.items() if k not in before or v is not before[k]}


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


class _Breaks(base.Probe):
    """A probe whose tick or stop raises, beside the real ones."""

    def __init__(self, name, where):
        self.name, self.where = name, where

    def tick(self, ctx):
        if self.where == "tick":
            raise RuntimeError("tick broke")

    def stop(self, ctx):
        if self.where == "stop":
            raise RuntimeError("stop broke")
        return base.Section()


def test_an_inspection_with_probes_that_break_still_reports_the_others():
    """pid 1 for 0.3 s (read only, as every inspection): the thread sampler and the stacks still
    report; each broken probe is named in the limitations, once."""
    if not os.access("/proc/1/stat", os.R_OK):
        pytest.skip("pid 1 not visible here")
    probes = default_probes()
    probes[3:3] = [_Breaks("ticking", "tick"), _Breaks("stopping", "stop")]
    cap = Inspection(Config(pid=1, duration=0.3), probes=probes).run()
    assert cap["processes"] and cap["processes"][0]["pid"] == 1 and cap["processes"][0]["threads"]
    assert cap["window"]["samples"] >= 1 and cap["resources"]["available"]
    said = [line for line in cap["limitations"] if "broke" in line]
    assert said == ["ticking: the probe failed during the window (RuntimeError in tick(): tick broke): only what "
                    "it saw before is reported",
                    "stopping: not measured (the probe failed: RuntimeError in stop(): stop broke)"], said


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
