"""Renderers: a Report (render/model.py) in, text out. No sampling, no diagnosis here.

One renderer per format, each behind the Renderer interface; RENDERERS is the table of them, and
an output path's extension picks its format from it. `stalldiag merge`'s Incident goes through
the same renderers.
"""
import os
from typing import Optional, Protocol, Tuple, runtime_checkable

from .json_report import JsonRenderer
from .markdown import MarkdownRenderer
from .model import Incident, Report
from .speedscope import SpeedscopeRenderer
from .terminal import TextRenderer


@runtime_checkable
class Renderer(Protocol):
    format: str                    # the name outputs and render() use
    extensions: Tuple[str, ...]    # an output path ending so is written in this format

    def render(self, report: Report, color: bool = False) -> str:
        """The whole report in this format (color: ANSI colours, where the format has them)."""

    def render_incident(self, incident: Incident, color: bool = False, all_ranks: bool = False) -> Optional[str]:
        """A merged incident in this format; None where the format has no incident form. all_ranks:
        every rank on a line of its own, besides the classes and outliers."""


class _HtmlOnDemand:
    """The HTML renderer, imported the first time a page is written (its module, the chain picture
    and the page's assets cost every start 5 ms otherwise)."""
    format = "html"
    extensions: Tuple[str, ...] = (".html", ".htm")

    def _real(self):
        from .html import HtmlRenderer
        return HtmlRenderer()

    def render(self, report, color=False):
        return self._real().render(report, color=color)

    def render_incident(self, incident, color=False, all_ranks=False):
        return self._real().render_incident(incident, color=color, all_ranks=all_ranks)


RENDERERS = {r.format: r for r in (TextRenderer(), MarkdownRenderer(), _HtmlOnDemand(), JsonRenderer(),
                                   SpeedscopeRenderer())}


def format_for_path(path):
    """The format an output path asks for by its extension (the longest that matches), or None."""
    lower = path.lower()
    last = os.path.splitext(lower)[1]
    found = [(len(ext), r.format) for r in RENDERERS.values() for ext in r.extensions
             if ext == last or (ext.count(".") > 1 and lower.endswith(ext))]
    return max(found)[1] if found else None


def renderer(fmt) -> Renderer:
    try:
        return RENDERERS[fmt]
    except KeyError:
        raise ValueError("unknown format %r" % fmt) from None


def render(report, fmt, color=False):
    return renderer(fmt).render(report, color=color)


def render_incident(incident, fmt, color=False, all_ranks=False):
    """An Incident in format fmt. A format without an incident form (speedscope) gets the
    terminal text, as `stalldiag merge` always wrote there."""
    text = renderer(fmt).render_incident(incident, color=color, all_ranks=all_ranks)
    return RENDERERS["text"].render_incident(incident, color=color, all_ranks=all_ranks) if text is None else text
