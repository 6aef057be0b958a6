"""Values of the command line's options: rule selections (``-r name:opt=val:flag,other``),
output formats, time filters, ``name=value`` configurations, booleans, and the run settings
made of them (one-line errors naming the option).

Inside an option value of ``-r`` a literal ``,`` or ``:`` is written ``\\,`` / ``\\:`` (and
``\\\\`` for a backslash); other backslashes (regex escapes such as ``\\d``) are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from asysstats.analysis.declarations import split_unescaped, unescape
from asysstats.core.errors import AsysError
from asysstats.writing.writers import FORMATS


def parse_format(text: str) -> tuple[str, int]:
    """``csv`` or ``csv:ratio=.2%`` -> (format, decimals of percentages)."""
    name, _, unit = text.partition(":")
    name = name.strip().lower()
    if name not in FORMATS:
        raise AsysError(f"--format: unknown format {name!r} (formats: {', '.join(FORMATS)})")
    decimals = 1
    if unit:
        key, _, value = unit.partition("=")
        value = value.strip()
        if key.strip() != "ratio" or not value.endswith("%"):
            raise AsysError(f"--format {text}: expected ':ratio=.N%' (N = 1, 2 or 3)")
        digits = value[:-1].lstrip(".")
        if value == "%":
            digits = "1"
        if not digits.isdigit() or not 0 <= int(digits) <= 3:
            raise AsysError(f"--format {text}: the ratio unit is %, .1%, .2% or .3%")
        decimals = int(digits)
    return name, decimals


def parse_filter_time(text: str | None) -> tuple[int | None, int | None] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition("/")
    if not sep:
        raise AsysError(f"--filter-time {text!r}: expected <start>/<end> in ns (either may be empty)")
    try:
        bounds = (int(lo) if lo.strip() else None, int(hi) if hi.strip() else None)
    except ValueError:
        raise AsysError(f"--filter-time {text!r}: start and end must be integers (ns)") from None
    if bounds[0] is not None and bounds[1] is not None and bounds[1] < bounds[0]:
        raise AsysError(f"--filter-time {text!r}: end is before start")
    return bounds


def settings_from(filter_time: str | None, filter_hgtx: str | None, callstack: Sequence[str], opconfig: Sequence[str],
                  kernel_groups: Sequence[str], keep_suspect_events: bool = False,
                  device_spec: str | None = None) -> dict[str, Any]:
    """The run settings of the command line's options, as :func:`asysstats.open` takes them."""
    return {"filter_time": parse_filter_time(filter_time), "filter_hgtx": filter_hgtx,
            "callstack_groups": parse_pairs(callstack, "--callstack-group-config"),
            "ppu_op_config": parse_pairs(opconfig, "--ppu-op-config"),
            "kernel_groups": parse_pairs(kernel_groups, "--kernel-group-config"),
            "keep_suspect_events": keep_suspect_events, "device_spec": device_spec or None}


def bool_value(text: str, what: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise AsysError(f"{what}: expected true or false, got {text!r}")


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


def parse_pairs(values: Sequence[str], what: str) -> list[tuple[str, str]]:
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
