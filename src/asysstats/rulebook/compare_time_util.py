"""``ppu_time_util_compare``: each device's PPU time utilisation in two reports.

Devices pair by id when both reports have the same ids; otherwise (an H100 device 0 against
an MI300 device 2, rank 0's GPU against rank 1's) by order of id, with a note saying so.
``pair-devices=B=T/...`` pairs base device B with target device T (the devices it does not
name pair by id).

A device's utilisation is ``ppu_time_util`` with a single chunk and every chunk reported:
the union of its PPU activities (kernels, memcpy, memset; all processes) over its time
range (``range-mode``). The columns are those of the reference's example output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from asysstats.analysis.activity import device_names
from asysstats.analysis.comparison import (
    BASE,
    DEVICE_NAME,
    MATCHED_ONLY,
    TARGET,
    Pairing,
    comparison_rule,
    pair,
    side,
)
from asysstats.analysis.declarations import RANGE_MODE, ROWS, Option, Options, merged_reads
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import DEVICE_READS
from asysstats.core.errors import AsysError, quoted
from asysstats.core.integers import parse_int
from asysstats.core.result import INT, PAIR_INT, PAIR_PERCENT, PAIR_TEXT, Frame
from asysstats.rulebook.analyze import ACTIVITY_KINDS, PPU_TIME_UTIL, TimeUtilOptions

WHOLE_RANGE = TimeUtilOptions(chunks=1, threshold=101, merge_process_id=True)  # one chunk per device, always reported


PAIR_DEVICES = Option("pair-devices", "str_list", "Pair base device B with target device T (B=T, '/'-separated; "
                      "default: by id when the reports have the same ids, else by order).", None)
RULE_NAME = "ppu_time_util_compare"


@dataclass(frozen=True)
class CompareOptions(Options):
    rows: int | None = ROWS.field()
    range_mode: str = RANGE_MODE.field()
    pair_devices: tuple[str, ...] | None = PAIR_DEVICES.field()
    matched_only: bool = MATCHED_ONLY.field()


def given_pairs(texts: tuple[str, ...], base: list[int], target: list[int]) -> dict[int, int]:
    """``pair-devices`` as base id -> target id; an error naming the item at fault (not
    ``B=T``, a device paired twice, or one its report does not have)."""
    pairs: dict[int, int] = {}
    for text in texts:
        base_id, sep, target_id = text.partition("=")
        where = f"rule '{RULE_NAME}': option 'pair-devices' item {quoted(text)}"
        if not sep:
            raise AsysError(f"{where}: expected <base device id>=<target device id>")
        ids = [parse_int(part, where, 0) for part in (base_id, target_id)]
        if ids[0] in pairs or ids[1] in pairs.values():
            raise AsysError(f"{where}: pairs a device twice")
        for which, device, devices in (("base", ids[0], base), ("target", ids[1], target)):
            if device not in devices:
                raise AsysError(f"{where}: the {which} report has no device {device} "
                                f"(its devices: {', '.join(map(str, sorted(devices))) or 'none'})")
        pairs[ids[0]] = ids[1]
    return pairs


def device_pairs(base: list[int], target: list[int], given: tuple[str, ...] | None) -> tuple[dict[int, int], bool]:
    """Base device id -> target device id, and whether they were paired by order."""
    if given:
        pairs = given_pairs(given, base, target)
        free_base = [d for d in base if d not in pairs]
        return {**pairs, **{d: d for d in free_base if d in target and d not in pairs.values()}}, False
    if sorted(base) == sorted(target):
        return {d: d for d in base}, False
    return dict(zip(sorted(base), sorted(target))), True


def paired_devices(frames: tuple[Frame, Frame], options: CompareOptions, sides: tuple[Inputs, Inputs]) -> Pairing:
    """Rows of the paired devices (:func:`device_pairs`), base rows first; a note when by order."""
    base, target = (frame["Device ID"].tolist() for frame in frames)
    pairs, by_order = device_pairs(base, target, options.pair_devices)
    if by_order:
        shown = ", ".join(f"{b}={t}" for b, t in sorted(pairs.items()))
        sides[0].notes.append(f"{RULE_NAME}: the reports' device ids differ; devices paired by order: base=target "
                              f"{shown or 'none'} (pair-devices=B=T pairs them otherwise)")
    at = {device: row for row, device in enumerate(target)}
    found = [at.get(pairs.get(device, -1), -1) for device in base]
    rest = sorted(set(range(len(target))) - set(found))
    return Pairing(np.r_[np.arange(len(base)), np.full(len(rest), -1)].astype(np.int64),
                   np.array(found + rest, dtype=np.int64))


def device_utilisation(inputs: Inputs, options: CompareOptions) -> Frame:
    """Per device: In-Use (%), Duration (ns), PPU Active Time (ns), Device ID, Device Name."""
    util = PPU_TIME_UTIL.compute(inputs, replace(WHOLE_RANGE, range_mode=options.range_mode))
    in_use, duration = util["In-Use (%)"], util["Duration (ns)"]
    names = device_names(inputs)
    return {
        "In-Use (%)": in_use, "Duration (ns)": duration,
        "PPU Active Time (ns)": np.rint(in_use * duration / 100.0).astype(np.int64),
        "Device ID": util["Device ID"],
        DEVICE_NAME: np.array([names.get(d) for d in util["Device ID"].tolist()], dtype=object),
    }


CELLS = (
    pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name"),
    pair("In-Use (%)", "In-Use (%)", PAIR_PERCENT, "Percentage of time the PPU was active"),
    pair("Duration (ns)", "Duration (ns)", PAIR_INT, "Duration of the time range"),
    pair("PPU Active Time (ns)", "PPU Active Time (ns)", PAIR_INT, "PPU active time, overlaps counted once"),
    side("Base Device ID", "Device ID", BASE, "PPU device identifier in the base report", INT),
    side("Target Device ID", "Device ID", TARGET, "PPU device identifier in the target report", INT),
)

TIME_UTIL_COMPARE = comparison_rule(
    name="ppu_time_util_compare",
    title="PPU Time Utilization Comparison",
    help="Each device's time utilisation (active time over the time range of 'range-mode') in the base and "
         "target reports; devices pair by id, by order when the reports' ids differ (with a note), or as "
         "'pair-devices' says; sorted by the larger of the two In-Use values, descending.",
    cells=CELLS,
    side_frame=device_utilisation,
    keys=("Device ID",),
    sort="In-Use (%)",
    options=CompareOptions,
    reads=merged_reads(PPU_TIME_UTIL.reads, DEVICE_READS),
    requires=ACTIVITY_KINDS,
    match=paired_devices,
    share="PPU Active Time (ns)",
    label="Target Device ID",
)

RULES = [TIME_UTIL_COMPARE]
