"""The JSON report: Report.to_dict(), the capture inside (the contract other tools read)."""
from typing import Tuple
import json


def render(report):
    # compact: json's C encoder only runs without indent (10x faster on large captures)
    return json.dumps(report.to_dict(), separators=(",", ":"), default=str) + "\n"


def render_incident(incident):
    return json.dumps(incident.to_dict(), indent=1) + "\n"


class JsonRenderer:
    format = "json"
    extensions: Tuple[str, ...] = (".json",)

    # render() and render_incident() below are this module's functions, looked up when called
    def render(self, report, color=False):
        return render(report)

    def render_incident(self, incident, color=False, all_ranks=False):
        return render_incident(incident)
