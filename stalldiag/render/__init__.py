"""Renderers: a report dict in, text out.  No sampling, no diagnosis here."""
import importlib
import json
import os

FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".html": "html",
           ".htm": "html"}


def format_for_path(path):
    if path.lower().endswith(".speedscope.json"):
        return "speedscope"
    ext = os.path.splitext(path)[1].lower()
    return FORMATS.get(ext)


def render(report, fmt, color=False):
    if fmt == "json":
        # compact: json's C encoder only runs without indent (10x faster on large captures)
        return json.dumps(report, separators=(",", ":"), default=str) + "\n"
    if fmt == "text":
        return _renderer("terminal").render(report, color=color)
    if fmt in ("markdown", "html", "speedscope"):
        return _renderer(fmt).render(report)
    raise ValueError("unknown format %r" % fmt)


def _renderer(name):
    # imported when asked for: a run that writes JSON and the terminal text loads neither
    # the HTML nor the Markdown renderer
    return importlib.import_module("." + name, __name__)
