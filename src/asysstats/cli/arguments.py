"""Values of the command line's options: output formats, time filters, booleans, and the
run settings built from them (one-line errors naming the option)."""

from __future__ import annotations

from asysstats.analysis.inputs import Settings
from asysstats.cli.selection import parse_pairs
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


def settings_from(filter_time, filter_hgtx, callstack, opconfig, kernel_groups, keep_suspect_events=False,
                  device_spec=None) -> Settings:
    specs = ()
    if device_spec:
        from asysstats.analysis.operators.catalog import read_device_spec  # operator modules: start-up time

        specs = read_device_spec(device_spec)
    return Settings(
        keep_suspect_events=keep_suspect_events,
        device_specs=specs,
        filter_time=parse_filter_time(filter_time),
        filter_hgtx=filter_hgtx,
        callstack_groups=tuple(parse_pairs(callstack, "--callstack-group-config")),
        ppu_op_config=tuple(parse_pairs(opconfig, "--ppu-op-config")),
        kernel_groups=tuple(parse_pairs(kernel_groups, "--kernel-group-config")),
    )


def bool_value(text: str, what: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise AsysError(f"{what}: expected true or false, got {text!r}")
