"""The capture's schema: every saved capture, of any version, reads as the current one through
its migrations; a capture from a newer stalldiag is refused, not misread."""
import json

import pytest

from helpers import CAPTURES
from stalldiag import capture
from stalldiag.config import Config
from stalldiag.errors import CaptureError
from stalldiag.session import default_probes


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_saved_capture_reads_as_the_current_schema(path):
    raw = json.loads(path.read_text())
    raw = raw.get("capture", raw)
    cap = capture.load_report(str(path))
    assert cap["schema_version"] == capture.SCHEMA_VERSION
    config = Config(**cap["request"]["config"])   # every field a Config has, and nothing else
    assert config.pid == raw["request"]["pid"] and config.children == bool(raw["request"].get("children"))
    assert config.duration == raw["request"].get("duration_s")


def test_a_migration_leaves_the_capture_it_reads_unchanged():
    raw = json.loads((CAPTURES / "deadlock.json").read_text())["capture"]
    before = json.dumps(raw, sort_keys=True)
    assert raw["schema_version"] == 1
    migrated = capture.migrate(raw)
    assert json.dumps(raw, sort_keys=True) == before and migrated["schema_version"] == capture.SCHEMA_VERSION
    assert capture.migrate(migrated) == migrated


def test_every_version_below_the_current_one_has_a_migration():
    assert sorted(capture.MIGRATIONS) == list(range(1, capture.SCHEMA_VERSION))


def test_a_capture_of_a_newer_schema_is_refused(tmp_path):
    raw = json.loads((CAPTURES / "deadlock.json").read_text())
    raw["capture"]["schema_version"] = capture.SCHEMA_VERSION + 1
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(CaptureError, match="newer than this stalldiag"):
        capture.load_report(str(path))


def test_the_resource_record_reads_as_typed_records_and_an_unmeasured_one_as_none():
    from stalldiag.diagnosis.types import Resources
    held = Resources.of(capture.load_report(str(CAPTURES / "gpu_memory_held_outside.json")))
    limits = held.limits_of(628)
    assert held.host.cpus == 16 and limits.cgroup.memory.limit == 128 << 30
    assert held.others[580].cmdline == "python3 -u gpu_memory_holder.py" and held.others[580].cpu_share == 0.0
    assert held.limits_of(1).cgroup.cpus == [] and held.limits_of(1).open_files is None   # not a job process
    assert Resources.of({"resources": {"available": False, "reason": "not measured"}}) is None
    assert Resources.of({}) is None


def test_the_sections_write_every_key_of_a_capture_and_build_keeps_the_saved_order():
    """What the probes write, and nothing else, is what a saved capture of this schema holds, in its
    order, so the JSON of a capture is the one it was before the interface."""
    written = {}
    for probe in default_probes():
        written.update(_written_by(probe.Section(), processes=[]))
    assert set(written) == {key for key, _default in capture.PROBE_KEYS} | {"permission_denied"}
    saved = json.loads((CAPTURES / "thread_died_poll.json").read_text())["capture"]
    built = capture.build({"hostname": "h"}, {"pid": 1}, {"start": 0}, [p.Section() for p in default_probes()])
    # keys added to the schema since that capture was recorded (an older capture lacks them and
    # reads as before: the diagnosis takes a missing key for "not measured")
    # collectives: the ranks' Flight Recorders (issue 34); socket_queues: where a request is (issue 39)
    added = {"objects", "collectives", "native", "socket_queues"}
    assert [key for key in built if key not in added] == list(saved)
    assert added <= set(built)
    assert built["resources"] == {"available": False, "reason": "not measured"} and built["limitations"] == []


def _written_by(section, processes):
    cap = {"processes": list(processes), "request": {"pid": 1}}
    before = dict(cap)
    section.write(cap)
    return {k: v for k, v in cap.items() if k not in before or v is not before[k]}
