"""Renderers: a report dict in, text out.  No sampling, no diagnosis here."""
import json
import os

from . import html, markdown, speedscope, terminal

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
    if fmt == "markdown":
        return markdown.render(report)
    if fmt == "text":
        return terminal.render(report, color=color)
    if fmt == "html":
        return html.render(report)
    if fmt == "speedscope":
        return speedscope.render(report)
    raise ValueError("unknown format %r" % fmt)
