"""One short inspection of pid 1 (read only, as every inspection; py-spy runs on it) with probes
that break beside the real ones: the others still report.  The probe interface itself is
tests/unit/test_probe_interface.py."""
import os

import pytest

from stalldiag.config import Config
from stalldiag.probes import base
from stalldiag.session import Inspection, default_probes


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
