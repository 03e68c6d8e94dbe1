"""`stalldiag report` on mutated captures: a clean result or exit 6, never a traceback."""
import copy
import json
import random

import pytest
from click.testing import CliRunner

from helpers import CAPTURES
from stalldiag.cli import cli

SEEDS = range(120)
SOURCES = ["deadlock", "dataloader_slow_io", "nccl_hang", "gloo_hang", "mp_pool"]
JUNK = [None, "", "x", -1, 0, 2**70, 1.5e308, [], {}, [[1, "a"]], {"a": None}, True, "\ud800"[:0] + "é"]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:6]):
            yield from _paths(item, prefix + (index,))


def mutate(report, rng):
    report = copy.deepcopy(report)
    paths = [p for p in _paths(report["capture"]) if p]
    for _ in range(rng.randint(1, 4)):
        path = rng.choice(paths)
        parent = report["capture"]
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = rng.random()
            if action < 0.35 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif action < 0.5 and isinstance(parent[path[-1]], list):
                parent[path[-1]] = parent[path[-1]][: rng.randint(0, 2)]
            else:
                parent[path[-1]] = rng.choice(JUNK)
        except (KeyError, IndexError, TypeError):
            continue
    return report


@pytest.fixture(scope="module")
def sources():
    return {name: json.loads((CAPTURES / (name + ".json")).read_text()) for name in SOURCES}


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_capture_never_crashes(seed, sources, tmp_path):
    rng = random.Random(seed)
    report = mutate(sources[SOURCES[seed % len(SOURCES)]], rng)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(report))
    outs = []
    for ext in (".md", ".html", ".txt", ".speedscope.json", ".json"):
        outs += ["-o", str(tmp_path / ("out" + ext))]
    result = CliRunner().invoke(cli, ["report", str(path)] + outs)
    assert result.exit_code in (0, 6), (result.exit_code, result.output, result.exception)
    if result.exit_code == 6:
        assert result.output.startswith("stalldiag: error: ") and result.output.count("\n") == 1
    else:
        assert result.exception is None


def test_truncated_files_at_every_tenth_never_crash(sources, tmp_path):
    raw = json.dumps(sources["deadlock"])
    for cut in range(0, len(raw), max(1, len(raw) // 10)):
        path = tmp_path / "cut.json"
        path.write_text(raw[:cut])
        result = CliRunner().invoke(cli, ["report", str(path)])
        assert result.exit_code == 6, (cut, result.output)
