"""Running a rule on its inputs: the data checked, the compute, the shaped result."""

from __future__ import annotations

from typing import Any, Mapping

from asysstats.analysis.declarations import Rule
from asysstats.analysis.inputs import Inputs
from asysstats.core.memory import release_memory
from asysstats.core.result import Result


def run_rule(rule: Rule, options: Mapping[str, Any], inputs: Inputs | tuple[Inputs, ...]) -> Result:
    """Check the data exists, compute, then apply the common ``rows`` and ``column`` options.
    What the computation freed goes back to the system before the table is written."""
    sides = inputs if isinstance(inputs, tuple) else (inputs,)
    for side in sides:
        side.require(*rule.required_tables)
    frame = rule.compute(inputs, options)
    release_memory()
    return rule.shaped(options, frame, sides[0].strings)


