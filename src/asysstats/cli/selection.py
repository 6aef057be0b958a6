"""Parsing of rule selections: ``-r name:opt=val:flag,other`` with backslash escapes.

Inside an option value a literal ``,`` or ``:`` is written ``\\,`` / ``\\:`` (and ``\\\\``
for a backslash); other backslashes (regex escapes such as ``\\d``) are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asysstats.core.errors import AsysError
from asysstats.core.escapes import split_unescaped, unescape


@dataclass(frozen=True)
class RuleRequest:
    name: str
    options: dict[str, str | None] = field(default_factory=dict)


def parse_rule_item(item: str) -> RuleRequest:
    fields = split_unescaped(item, ":")
    name = fields[0].strip()
    if not name:
        raise AsysError(f"empty rule name in {item!r}")
    options: dict[str, str | None] = {}
    for raw in fields[1:]:
        key, eq, value = raw.partition("=")
        key = key.strip()
        if not key:
            raise AsysError(f"rule '{name}': empty option in {item!r}")
        if key in options:
            raise AsysError(f"rule '{name}': option '{key}' given twice")
        options[key] = unescape(value) if eq else None
    return RuleRequest(name, options)


def parse_rule_args(values: list[str] | tuple[str, ...]) -> list[RuleRequest]:
    """All rule requests of repeated ``-r`` values, each a comma list."""
    requests = []
    for value in values:
        for item in split_unescaped(value, ","):
            requests.append(parse_rule_item(item))
    return requests


def parse_pairs(values: list[str] | tuple[str, ...], what: str) -> list[tuple[str, str]]:
    """``name=value`` config items (``--kernel-group-config`` and kin); ``@file`` reads one per line."""
    from pathlib import Path

    items: list[str] = []
    for value in values:
        if value.startswith("@"):
            path = Path(value[1:])
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise AsysError(f"{what}: cannot read {path}: {exc}") from exc
            items += [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        else:
            items.append(value)
    pairs = []
    for item in items:
        key, eq, rest = item.partition("=")
        if not eq or not key.strip() or not rest:
            raise AsysError(f"{what}: expected name=value, got {item!r}")
        pairs.append((key.strip(), rest))
    return pairs
