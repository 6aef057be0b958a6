"""Values of the command line's options: rule selections (``-r name:opt=val:flag,other``),
output formats, time filters, ``name=value`` configurations, booleans, and the run settings
made of them (one-line errors naming the option).

Inside an option value of ``-r`` a literal ``,`` or ``:`` is written ``\\,`` / ``\\:`` (and
``\\\\`` for a backslash); other backslashes (regex escapes such as ``\\d``) are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import click

from asysstats.analysis.declarations import split_unescaped, unescape
from asysstats.core.errors import AsysError, quoted
from asysstats.core.input_files import read_small_file
from asysstats.core.integers import INT64_MAX, INT64_MIN, parse_int
from asysstats.writing.writers import FORMATS


def parse_format(text: str) -> tuple[str, int]:
    """``csv`` or ``csv:ratio=.2%`` -> (format, decimals of percentages)."""
    name, _, unit = text.partition(":")
    name = name.strip().lower()
    if name not in FORMATS:
        raise AsysError(f"--format: unknown format {quoted(name)} (formats: {', '.join(FORMATS)})")
    decimals = 1
    if unit:
        key, _, value = unit.partition("=")
        value = value.strip()
        if key.strip() != "ratio" or not value.endswith("%"):
            raise AsysError(f"--format {quoted(text)}: expected ':ratio=.N%' (N = 1, 2 or 3)")
        digits = value[:-1].lstrip(".")
        if value == "%":
            digits = "1"
        if digits not in ("0", "1", "2", "3"):
            raise AsysError(f"--format {quoted(text)}: the ratio unit is %, .1%, .2% or .3%")
        decimals = int(digits)
    return name, decimals


def format_items(values: Sequence[str]) -> list[str]:
    """The ``--format`` values, repeated or comma lists (``csv,json``), in order."""
    return [item for value in values for item in value.split(",")]


def output_items(values: Sequence[str]) -> list[str]:
    """The ``--output`` values, repeated or comma lists (``%,out/p``), in order. A literal ``,``
    of a path is written ``\\,``; an ``@command`` item takes the rest of its value, commas and
    all, as a shell command's arguments may hold them (``-o %,@cut -d, -f2``)."""
    items = []
    for value in values:
        parts = split_unescaped(value, ",")
        for index, part in enumerate(parts):
            if part.lstrip().startswith("@"):
                items.append(",".join(parts[index:]).lstrip())
                break
            items.append(unescape(part))
    return items


def parse_filter_time(text: str | None) -> tuple[int | None, int | None] | None:
    """``<start>/<end>`` ns from the start of the capture, either empty (open), each an int64."""
    if text is None:
        return None
    lo, sep, hi = text.partition("/")
    if not sep:
        raise AsysError(f"--filter-time {quoted(text)}: expected <start>/<end> in ns (either may be empty)")
    bounds = tuple(parse_int(part, f"--filter-time {quoted(text)}: the {end} (ns)") if part.strip() else None
                   for end, part in (("start", lo), ("end", hi)))
    if bounds[0] is not None and bounds[1] is not None and bounds[1] < bounds[0]:
        raise AsysError(f"--filter-time {quoted(text)}: end is before start")
    return bounds[0], bounds[1]


def settings_from(filter_time: str | None, filter_hgtx: str | None, callstack: Sequence[str], opconfig: Sequence[str],
                  kernel_groups: Sequence[str], keep_suspect_events: bool = False,
                  device_spec: str | None = None, filter_nvtx: str | None = None) -> dict[str, Any]:
    """The run settings of the command line's options, as :func:`asysstats.open` takes them."""
    return {"filter_time": parse_filter_time(filter_time), "filter_hgtx": filter_hgtx, "filter_nvtx": filter_nvtx,
            "callstack_groups": parse_pairs(callstack, "--callstack-group-config"),
            "ppu_op_config": parse_pairs(opconfig, "--ppu-op-config"),
            "kernel_groups": parse_pairs(kernel_groups, "--kernel-group-config"),
            "keep_suspect_events": keep_suspect_events, "device_spec": device_spec or None}


class Integer(click.ParamType):
    """A click option's integer from ``minimum`` to ``maximum`` (int64 by default), read by
    :func:`~asysstats.core.integers.parse_int`: the one-line error names the option."""

    name = "integer"

    def __init__(self, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> None:
        self.minimum, self.maximum = minimum, maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        what = max(param.opts, key=len) if param is not None and param.opts else "the value"
        return parse_int(str(value), what, self.minimum, self.maximum)


def bool_value(text: str, what: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise AsysError(f"{what}: expected true or false, got {quoted(text)}")


@dataclass(frozen=True)
class RuleRequest:
    name: str
    options: dict[str, str | None] = field(default_factory=dict)


def parse_rule_item(item: str) -> RuleRequest:
    fields = split_unescaped(item, ":")
    name = fields[0].strip()
    if not name:
        raise AsysError(f"empty rule name in {quoted(item)}")
    options: dict[str, str | None] = {}
    for raw in fields[1:]:
        key, eq, value = raw.partition("=")
        key = key.strip()
        if not key:
            raise AsysError(f"rule {quoted(name)}: empty option in {quoted(item)}")
        if key in options:
            raise AsysError(f"rule {quoted(name)}: option {quoted(key)} given twice")
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
                text = read_small_file(path, f"{what} {value}").decode("utf-8")
            except UnicodeDecodeError as exc:
                raise AsysError(f"{what} {value}: not UTF-8 text ({exc})") from exc
            items += [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        else:
            items.append(value)
    pairs = []
    for item in items:
        key, eq, rest = item.partition("=")
        if not eq or not key.strip() or not rest:
            raise AsysError(f"{what}: expected name=value, got {quoted(item)}")
        pairs.append((key.strip(), rest))
    return pairs
