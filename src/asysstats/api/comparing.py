"""Comparisons of two reports: the comparison rules (``*_compare``) run on a base and a target,
the default set of ``asys compare`` (a rule whose data a report lacks is skipped with a note),
and :func:`compare`, their tables as ``pyarrow.Table``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import pyarrow as pa

from asysstats.analysis.declarations import Options, Rule
from asysstats.api.reports import Note, PathLike, Report, open
from asysstats.api.running import run_rule
from asysstats.api.tables import arrow_table
from asysstats.core.errors import AsysError, MissingData
from asysstats.core.result import Result
from asysstats.rulebook import REGISTRY, find_rule

O = TypeVar("O", bound=Options)
DEFAULT_COMPARE = ("ppu_operator_type_summary_compare", "ppu_time_util_compare", "ppu_operator_summary_compare",
                   "ppu_operator_kernel_breakdown_compare", "pccl_desync_summary_compare",
                   "ppu_kernel_summary_compare", "ppu_operator_roofline_compare")


@dataclass
class Comparison:
    """The computed comparisons (by rule name) and a note per skipped rule."""

    results: dict[str, Result]
    skipped: list[str]


def default_rules() -> list[Rule[Any]]:
    """The comparisons of ``asys compare`` this version has."""
    return [REGISTRY.get(name) for name in DEFAULT_COMPARE if name in REGISTRY]


def run_comparison(rule: Rule[O], options: O, base: Report, target: Report) -> Result:
    """The result of comparison ``rule`` of ``target`` against ``base``."""
    return run_rule(rule, options, (base.inputs(), target.inputs()))


def compare_reports(base: Report, target: Report, rules: Sequence[Rule[Any]],
                    options_of: Callable[[Rule[Any]], Options], skip_missing: bool = True) -> Comparison:
    """Run the comparison ``rules`` (each with ``options_of(rule)``) on two opened reports. The
    rules share each report's view, so that the operator comparisons analyse its operators once;
    with ``skip_missing``, a rule whose data a report lacks is skipped with a note."""
    sides = (base.inputs(), target.inputs())
    results, skipped = {}, []
    for rule in rules:
        try:
            results[rule.name] = run_rule(rule, options_of(rule), sides)
        except MissingData as exc:
            if not skip_missing:
                raise
            skipped.append(f"{rule.name}: {exc}")
    skipped += [f"{name}: not available in this version" for name in DEFAULT_COMPARE if name not in REGISTRY]
    return Comparison(results, skipped)


def compare(base: Report | PathLike, target: Report | PathLike, rules: Sequence[str] | None = None, *,
            cache: bool = True, **options: Any) -> dict[str, pa.Table]:
    """The tables of comparison ``rules`` (default: the set of ``asys compare``) of ``target``
    against ``base`` (reports, or paths opened with ``cache``), by rule name. ``options`` are
    Python values, each given to the rules that declare it. Of the default set, a rule whose
    data a report lacks is left out with a warning (:class:`~asysstats.api.reports.Note`)."""
    chosen = default_rules() if rules is None else [find_rule(name) for name in rules]
    for rule in chosen:
        if rule.reports != 2:
            raise AsysError(f"rule '{rule.name}' reads one report; use Report.stats (asysstats.open(path).stats)")
    known = {key for rule in chosen for o in rule.all_options for key in (o.name, o.attribute)}
    for key in options:
        if key not in known:
            raise AsysError(f"compare: option '{key}' is not an option of the compared rules "
                            f"({', '.join(r.name for r in chosen)})")

    def options_of(rule: Rule[Any]) -> Options:
        mine = {o.name for o in rule.all_options} | {o.attribute for o in rule.all_options}
        return rule.options_of({key: value for key, value in options.items() if key in mine})

    opened = [side if isinstance(side, Report) else open(side, cache=cache) for side in (base, target)]
    try:
        comparison = compare_reports(opened[0], opened[1], chosen, options_of, skip_missing=rules is None)
        tables = {name: arrow_table(result) for name, result in comparison.results.items()}
    finally:
        for given, report in zip((base, target), opened):
            if report is not given:
                report.close()
    for note in comparison.skipped + [n for result in comparison.results.values() for n in result.notes]:
        warnings.warn(note, Note, stacklevel=2)
    return tables
