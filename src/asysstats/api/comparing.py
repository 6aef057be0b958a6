"""The default comparison set of two reports (``asys compare``): every comparison of the set
that is registered, with its default options; one whose data a report lacks is skipped with a note."""

from __future__ import annotations

from dataclasses import dataclass

from asysstats.analysis.inputs import Inputs, Settings
from asysstats.api.running import run_rule
from asysstats.core.errors import MissingData
from asysstats.core.result import Result
from asysstats.reading.opening import open_report
from asysstats.rules.registry import REGISTRY

DEFAULT_COMPARE = ("ppu_operator_type_summary_compare", "ppu_time_util_compare", "ppu_operator_summary_compare",
                   "ppu_operator_kernel_breakdown_compare", "pccl_desync_summary_compare",
                   "ppu_kernel_summary_compare")

@dataclass
class Comparison:
    """The computed comparisons (by rule name) and a note per skipped rule."""

    results: dict[str, Result]
    skipped: list[str]


def compare_reports(base: str, target: str, settings: Settings, cache: bool = True) -> Comparison:
    """Run the default comparison set on two reports."""
    sides = tuple(Inputs(open_report(path, cache=cache), settings) for path in (base, target))
    results, skipped = {}, []
    for name in DEFAULT_COMPARE:
        if name not in REGISTRY:
            skipped.append(f"{name}: not available in this version")
            continue
        rule = REGISTRY.get(name)
        try:
            results[name] = run_rule(rule, rule.parse_options({}), sides)
        except MissingData as exc:
            skipped.append(f"{name}: {exc}")
    return Comparison(results, skipped)
