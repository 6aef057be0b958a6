"""Running the requested rules over the opened reports and delivering each result to its
output (console, file or command), as ``asys stats`` and ``asys analyze`` do."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Sequence

import click

from asysstats.analysis.declarations import Rule
from asysstats.analysis.inputs import Inputs, Settings
from asysstats.api.reports import ManyOptions, close_reports, open_reports
from asysstats.cli.arguments import parse_format
from asysstats.cli.progress import progress
from asysstats.cli.selection import RuleRequest
from asysstats.core.errors import AsysError, MissingData
from asysstats.core.files import refuse_overwrite
from asysstats.reading.opening import open_report
from asysstats.rules.registry import CHECK_RULE, REGISTRY, check_rule
from asysstats.writing.outputs import CONSOLE, FILE, Destination, deliver, destination
from asysstats.writing.writers import render_parts


def pad(values: Sequence[str], count: int) -> list[str | None]:
    """Extend a positional list to ``count`` items by repeating its last one."""
    values = list(values)
    if not values:
        return [None] * count
    return values[:count] + [values[-1]] * max(0, count - len(values))


def run_requests(command: str, reports: Sequence[str], requests: list[RuleRequest], formats: Sequence[str],
                 outputs: Sequence[str], force: bool, settings: Settings, default_set: bool, cache: bool,
                 many: ManyOptions = ManyOptions()) -> None:
    rules = [check_rule() if (command, r.name) == ("stats", CHECK_RULE) else REGISTRY.get(r.name, command)
             for r in requests]
    parsed = [rule.parse_options(r.options) for rule, r in zip(rules, requests)]
    fmts = [parse_format(f) if f else ("column", 1) for f in pad(formats, len(requests))]
    outs = pad(outputs, len(requests))
    for rule in rules:
        if rule.reports == 2 and len(reports) != 2:
            raise AsysError(f"rule '{rule.name}' compares two reports; give a base and a target report")
    many.check(rules)
    opened = open_reports(reports, many, cache, lambda line: click.echo(line, err=True), open_report)
    try:
        run_opened(opened, rules, parsed, fmts, outs, force, settings, default_set, many.runner())
    finally:
        close_reports(opened)


def run_opened(opened, rules, parsed, fmts, outs, force, settings, default_set, run) -> None:
    planned = [destinations(opened, rule, fmt, out, force) for rule, (fmt, _), out in zip(rules, fmts, outs)]
    notes: list[str] = []  # data-quality notes, printed after the run (the inputs, and what they share, let go)
    for rule, options, (fmt, decimals), dests in zip(rules, parsed, fmts, planned):
        sides = [Inputs(r, settings) for r in opened]
        targets = [tuple(sides[:2])] if rule.reports == 2 else sides
        for report, inputs, dest in zip(opened, targets, dests):
            try:
                with progress(f"{rule.name} on {report.path.name}"):
                    result = run(rule, options, inputs)
            except MissingData as exc:
                if not default_set:
                    raise
                click.echo(f"SKIPPED: {exc}", err=True)
                continue
            several = len(targets) > 1  # one output per report: headings name it
            shown = "column" if fmt == "xlsx" and dest.kind == CONSOLE else fmt
            content = render_parts(result, shown, decimals)
            if dest.kind == CONSOLE and shown == "column" and (len(rules) > 1 or default_set or several):
                deliver(f"\n** {rule.title} ({rule.name}){f' - {report.path}' if several else ''}:\n\n", dest, force)
            with progress(f"writing {dest.target}") if dest.kind == FILE else nullcontext():  # a trace: seconds
                deliver(content, dest, force)
        notes += [note for side in sides for note in side.notes]
    for note in dict.fromkeys(notes):
        click.echo(f"note: {note}", err=True)


def destinations(opened: list, rule: Rule, fmt: str, output: str | None, force: bool) -> list[Destination]:
    """Where the rule's result on each report goes (one, for a comparison of two), found before
    any rule runs: a missing folder, or a file that is there without ``force``, stops the run
    before minutes of work rather than after."""
    reports = opened[:1] if rule.reports == 2 else opened
    several = len(reports) > 1  # one output per report: file names name it
    found = [destination(per_report(output, r.path) if several else output, r.path, rule.name, fmt) for r in reports]
    for dest in found:
        if dest.kind == FILE:
            refuse_overwrite(Path(dest.target), force)
    return found


def per_report(output: str | None, report: Path) -> str | None:
    """``<dir>/<prefix>`` for one of several reports: ``<dir>/<prefix>_<report stem>``."""
    if output in (None, "", "%", "-", ".") or output.startswith("@"):
        return output
    return f"{output}{'' if output.endswith('/') else '_'}{report.stem}"
