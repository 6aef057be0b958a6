"""Running a rule on its inputs: the data checked, the compute over the rule's view of each
report (what it declares it reads), the shaped result."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from asysstats.analysis.declarations import Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.core.memory import release_memory
from asysstats.core.result import Result
from asysstats.core.tables import window_mask

O = TypeVar("O", bound=Options)


def run_rule(rule: Rule[O], options: O, inputs: Inputs | tuple[Inputs, ...]) -> Result:
    """Check the data exists, compute, then apply the common ``rows`` and ``column`` options.
    What the computation freed goes back to the system before the table is written."""
    sides = inputs if isinstance(inputs, tuple) else (inputs,)
    for side in sides:
        side.require(*rule.required_tables)
    views = tuple(side.for_rule(rule.name, rule.reads) for side in sides)
    frame = rule.compute(views if isinstance(inputs, tuple) else views[0], options)
    release_memory()
    result = rule.shaped(options, frame, sides[0].strings, [note for side in sides for note in side.notes])
    if result.rows == 0 and not isinstance(inputs, tuple):
        note = empty_window_note(rule, inputs)
        if note:
            result.notes += (note,)
    return result


def empty_window_note(rule: Rule, inputs: Inputs) -> str | None:
    """Why a rule's table is empty when ``--filter-time`` selects none of the events its rows
    come from (its required tables): the capture's span and theirs, in ns from the capture start,
    so that the user can pick a window that holds them."""
    window, span = inputs.settings.filter_time, inputs.window
    if window is None or inputs.settings.filter_hgtx or span is None:
        return None
    engine = inputs.engine()
    found = {name: engine.whole(name, [c for c in ("start", "end") if c in rule.reads.get(name, ())])
             for name in rule.required_tables if "start" in rule.reads.get(name, ()) and engine.has(name)}
    if not found or any(window_mask(table, span).any() for table in found.values()):
        return None
    origin, stop = inputs.capture_range()
    given = "/".join("" if bound is None else str(bound) for bound in window)
    note = f"{rule.name}: no events in --filter-time {given}; the capture spans 0..{stop - origin} ns"
    held = {name: table for name, table in found.items() if table.rows}
    if held:
        first = min(int(table["start"].min()) for table in held.values())
        last = max(int(np.maximum(table["end"], table["start"]).max() if "end" in table else table["start"].max())
                   for table in held.values())
        note += f" and its {'/'.join(held)} {first - origin}..{last - origin} ns"
    return note
