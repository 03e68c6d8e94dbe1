"""The sampled Python stacks in speedscope's file format (https://www.speedscope.app).

One "sampled" profile per thread that py-spy sampled, its samples in time
order (the run-length encoding of the capture expanded), each sample a list
of frame indexes root first, every weight 1 (unit "none": one py-spy sample).
Frame indexes are the report's frames table (the capture's).
"""
from typing import Tuple
import json

from .. import __version__

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _text(value):
    text = "" if value is None else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def speedscope(report):
    frames, stacks = report.frames, report.stacks
    shared = []
    for f in frames:
        entry = {"name": _text(f.function) or "?"}
        if f.file:
            entry["file"] = _text(f.file)
        if isinstance(f.line, int):
            entry["line"] = f.line
        shared.append(entry)
    unknown = None

    def root_first(stack_id):
        nonlocal unknown
        ids = stacks[stack_id] if isinstance(stack_id, int) and 0 <= stack_id < len(stacks) else None
        if not isinstance(ids, list):
            if unknown is None:
                unknown = len(shared)
                shared.append({"name": "[stack not in capture]"})
            return [unknown]
        out = []
        for i in reversed(ids):
            if isinstance(i, int) and 0 <= i < len(frames):
                out.append(i)
            else:
                if unknown is None:
                    unknown = len(shared)
                    shared.append({"name": "[stack not in capture]"})
                out.append(unknown)
        return out

    verdict = report.verdict
    profiles, active = [], 0
    for proc in report.processes:
        for thread in proc.threads:
            samples = []
            for stack_id, count in thread.stack_runs:
                stack = root_first(stack_id)
                samples.extend([stack] * count)
            if not samples:
                continue
            if proc.pid == verdict.pid and thread.tid == verdict.tid:
                active = len(profiles)
            name = thread.name or "?"
            profiles.append({
                "type": "sampled",
                "name": "pid %s tid %s %s" % (proc.pid, thread.tid, _text(name)),
                "unit": "none",
                "startValue": 0,
                "endValue": len(samples),
                "samples": samples,
                "weights": [1] * len(samples),
            })
    title = "stalldiag: %s" % (verdict.category or "?")
    if verdict.summary:
        title += " \u2014 %s" % _text(verdict.summary)
    return {
        "$schema": SCHEMA,
        "shared": {"frames": shared},
        "profiles": profiles,
        "activeProfileIndex": active if profiles else None,
        "name": title,
        "exporter": "stalldiag %s" % __version__,
    }


def render(report):
    data = speedscope(report)
    if data["activeProfileIndex"] is None:
        del data["activeProfileIndex"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


class SpeedscopeRenderer:
    format = "speedscope"
    extensions: Tuple[str, ...] = (".speedscope.json",)

    # render() below is this module's function, looked up when called
    def render(self, report, color=False):
        return render(report)

    def render_incident(self, incident, color=False, all_ranks=False):
        return None     # an incident has no stacks
