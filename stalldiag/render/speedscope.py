"""The sampled Python stacks in speedscope's file format (https://www.speedscope.app).

One "sampled" profile per thread that py-spy sampled, its samples in time
order (the run-length encoding of the capture expanded), each sample a list
of frame indexes root first, every weight 1 (unit "none": one py-spy sample).
Frame indexes are the capture's own frames table.
"""
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
    cap = report.get("capture") or {}
    frames = cap.get("frames") or []
    stacks = cap.get("stacks") or []
    shared = []
    for f in frames:
        f = f if isinstance(f, (list, tuple)) and f else ["?"]
        entry = {"name": _text(f[0]) or "?"}
        if len(f) > 1 and f[1]:
            entry["file"] = _text(f[1])
        if len(f) > 2 and isinstance(f[2], int):
            entry["line"] = f[2]
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

    verdict = report.get("verdict") or {}
    profiles, active = [], 0
    for proc in cap.get("processes") or []:
        for thread in proc.get("threads") or []:
            samples = []
            for run in thread.get("stack_samples") or []:
                try:
                    stack_id, count = run
                except (TypeError, ValueError):
                    continue
                if not isinstance(count, int) or count <= 0:
                    continue
                stack = root_first(stack_id)
                samples.extend([stack] * count)
            if not samples:
                continue
            if proc.get("pid") == verdict.get("pid") and thread.get("tid") == verdict.get("tid"):
                active = len(profiles)
            name = thread.get("python_name") or thread.get("name") or "?"
            profiles.append({
                "type": "sampled",
                "name": "pid %s tid %s %s" % (proc.get("pid"), thread.get("tid"), _text(name)),
                "unit": "none",
                "startValue": 0,
                "endValue": len(samples),
                "samples": samples,
                "weights": [1] * len(samples),
            })
    title = "stalldiag: %s" % (verdict.get("category") or "?")
    if verdict.get("summary"):
        title += " \u2014 %s" % _text(verdict["summary"])
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
