"""Running a rule on its inputs: the data checked, the compute over the rule's view of each
report (what it declares it reads), the shaped result."""

from __future__ import annotations

from typing import TypeVar

from asysstats.analysis.declarations import Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.core.memory import release_memory
from asysstats.core.result import Result

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
    return rule.shaped(options, frame, sides[0].strings, [note for side in sides for note in side.notes])
