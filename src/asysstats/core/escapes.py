"""Backslash escapes in option values: a literal ``,`` or ``:`` is written ``\\,`` / ``\\:`` (and
``\\\\`` for a backslash); other backslashes (regex escapes such as ``\\d``) are kept."""

from __future__ import annotations


def split_unescaped(text: str, sep: str) -> list[str]:
    """Split on ``sep`` not preceded by a backslash; escapes are kept for the next level."""
    parts, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ",:\\":
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
