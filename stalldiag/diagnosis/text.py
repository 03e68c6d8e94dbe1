"""Shortening text for a report line: at a word, and saying that something was cut (the diagnosis
and the renderers both shorten this way)."""


def clip(text, limit):
    """text of at most limit characters, cut at a space (not inside a word or a number) and ended
    with "…" when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"


def clip_items(items, limit):
    """As many whole items, joined by "; ", as fit in limit characters (the first one clipped if it
    alone is longer), and how many were left out."""
    shown = []
    for item in items:
        text = "; ".join(shown + [item])
        if len(text) > limit:
            break
        shown.append(item)
    if not shown and items:
        return clip(items[0], limit) + (" (+%d more)" % (len(items) - 1) if len(items) > 1 else "")
    left = len(items) - len(shown)
    return "; ".join(shown) + (" (+%d more)" % left if left else "")
