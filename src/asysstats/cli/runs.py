"""``asys stats`` and ``asys analyze``: the requested rules run on the reports the API opens,
each result delivered to its output (console, file or command)."""

from __future__ import annotations

import json
import shlex
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from asysstats.analysis.declarations import Options, Rule
from asysstats.api.reports import Report, open
from asysstats.cli.arguments import RuleRequest, format_items, output_items, parse_format
from asysstats.cli.progress import progress
from asysstats.core.errors import AsysError, MissingData
from asysstats.core.result import NSYS_STATS, Result
from asysstats.rulebook import find_rule
from asysstats.writing.outputs import (
    BOOK,
    CONSOLE,
    FILE,
    Destination,
    check_files,
    default_format,
    deliver,
    destination,
    numbered_rules,
    report_labels,
)
from asysstats.writing.writers import render_parts

# Rows of each table of the default set on the console (a brief summary, asys-cli.md): the top ten
# of tables sorted by time hold most of it, and the six tables fit in about a hundred lines.
SUMMARY_ROWS = 10


@dataclass(frozen=True)
class ManyOptions:
    """``--merge-reports``, ``--ts-normalize``, ``--ts-shift``, ``--scheduler``, ``--skip-bad-reports``."""

    merge: bool = False
    normalize: bool = False
    shifts: tuple[int, ...] = ()
    scheduler: str | None = None
    skip_bad: bool = False


def pad(values: Sequence[Any], count: int) -> list[Any]:
    """Extend a positional list to ``count`` items by repeating its last one."""
    values = list(values)
    if not values:
        return [None] * count
    return values[:count] + [values[-1]] * max(0, count - len(values))


def run_requests(command: str, reports: Sequence[str], requests: list[RuleRequest], formats: Sequence[str],
                 outputs: Sequence[str], force: bool, settings: dict[str, Any], default_set: bool, cache: bool,
                 many: ManyOptions = ManyOptions(), rerun: Sequence[str] = (), timeunit: str | None = None) -> None:
    """Check every rule, option, format and output, open the reports, run each rule on each
    (``rerun``: the options that change the rows, for the hints of the brief summary;
    ``timeunit``: nsys's, for the rules that mirror its reports)."""
    rules = [find_rule(r.name, command) for r in requests]
    unit = "nsec"
    if timeunit is not None:
        from asysstats.writing.nsys import time_unit  # the runs with --timeunit only

        unit = time_unit(timeunit)
    for rule in rules:
        if unit != "nsec" and rule.mirrors != NSYS_STATS:
            raise AsysError(f"--timeunit: rule '{rule.name}' prints its times in ns, as the asys reference does; "
                            "--timeunit applies to NVIDIA's report names (asys stats --help-reports)")
    parsed = [rule.parse_options(r.options) for rule, r in zip(rules, requests)]
    outs = pad(output_items(outputs), len(requests))
    fmts = [parse_format(f) if f else (default_format(out), 1)
            for f, out in zip(pad(format_items(formats), len(requests)), outs)]
    for rule in rules:
        if rule.reports == 2 and len(reports) != 2:
            raise AsysError(f"rule '{rule.name}' compares two reports; give a base and a target report")
    if many.scheduler and not many.merge:
        raise AsysError("--scheduler runs merged reports on a cluster; it needs --merge-reports")
    if many.merge:
        from asysstats.api.merging.hosts import check_mergeable

        for rule in rules:
            check_mergeable(rule)
    opened = open_reports(reports, many, cache, settings, lambda line: click.echo(line, err=True))
    try:
        run_opened(opened, rules, parsed, fmts, outs, force, default_set, [Path(path) for path in reports],
                   f"asys {command}", tuple(rerun), unit)
    finally:
        for report in opened:
            report.close()


def open_reports(paths: Sequence[str], many: ManyOptions, cache: bool, settings: dict[str, Any],
                 warn: Callable[[str], None]) -> list[Report]:
    """The reports a run reads: one merged report, or one per path (its clock shifted when
    asked); with ``skip_bad``, those that cannot be read are left out with a warning."""
    if many.merge:
        merged = open(paths, cache=cache, merge=True, scheduler=many.scheduler, skip_bad_reports=many.skip_bad,
                      ts_normalize=many.normalize, ts_shift=many.shifts, **settings)
        for message in merged.skipped:
            warn(f"skipped: {message}")
        return [merged]
    opened = []
    for path, shift in zip(paths, pad(many.shifts or (0,), len(paths))):
        try:
            opened.append(open(path, cache=cache, ts_normalize=many.normalize, ts_shift=shift, **settings))
        except AsysError as exc:
            if not many.skip_bad:
                raise
            warn(f"skipped: {exc}")
    if not opened:
        raise AsysError(f"none of the {len(paths)} reports could be read")
    return opened


def run_opened(opened: list[Report], rules: list[Rule[Any]], parsed: list[Options], fmts: list[tuple[str, int]],
               outs: list[str | None], force: bool, default_set: bool, read: list[Path], command: str = "asys stats",
               rerun: tuple[str, ...] = (), unit: str = "nsec") -> None:
    planned = destinations(opened, rules, [fmt for fmt, _ in fmts], outs, force, read)
    console = [fmt for (fmt, _), dests in zip(fmts, planned) for dest in dests if dest.kind == CONSOLE]
    document = JsonDocument() if len(console) > 1 and set(console) == {"json"} else None
    notes: list[str] = []  # data-quality notes, printed after the run
    books: dict[str, list[tuple[str, Result, int]]] = {}  # each workbook's sheets, written after the run
    for rule, options, (fmt, decimals), dests in zip(rules, parsed, fmts, planned):
        runs: list[tuple[Report, Callable[[], Result]]]
        if rule.reports == 2:
            from asysstats.api.comparing import run_comparison  # the runs of a comparison rule only

            runs = [(opened[0], partial(run_comparison, rule, options, opened[0], opened[1]))]
        else:
            runs = [(report, partial(report.run, rule, options)) for report in opened]
        for (report, run), dest in zip(runs, dests):
            try:
                with progress(f"{rule.name} on {report.path.name}"):
                    result = run()
            except MissingData as exc:
                if rule.mirrors == NSYS_STATS:  # as nsys: a line, and on to the next report (exit 0)
                    click.echo(f"SKIPPED: {report.path} does not contain {exc.lacking}.", err=True)
                    continue
                if not default_set:
                    raise
                click.echo(f"SKIPPED: {exc}", err=True)
                continue
            notes += result.notes
            if unit != "nsec":
                from asysstats.writing.nsys import in_time_unit

                result = in_time_unit(result, unit)
            if dest.kind == BOOK:
                books.setdefault(dest.target, []).append((dest.key, result, decimals))
                continue
            several = len(runs) > 1  # one output per report: headings name it
            shown = "column" if fmt == "xlsx" and dest.kind == CONSOLE else fmt
            brief = default_set and dest.kind == CONSOLE and shown == "column" and result.rows > SUMMARY_ROWS
            content = render_parts(result.head(SUMMARY_ROWS) if brief else result, shown, decimals)
            if dest.kind == CONSOLE and shown == "column" and (len(rules) > 1 or default_set or several):
                deliver(f"\n** {rule.title} ({rule.name}){f' - {report.path}' if several else ''}:\n\n", dest, force)
            if document is not None:
                deliver(document.key(dest.key), dest, force)
            with progress(f"writing {dest.target}") if dest.kind == FILE else nullcontext():  # a trace: seconds
                deliver(content, dest, force)
            if brief:
                more = shlex.join([*command.split(), "-r", rule.name, *rerun, str(report.path)])
                deliver(f"\u2026 {result.rows - SUMMARY_ROWS} more rows: {more}\n", dest, force)
    if document is not None:
        deliver(document.end(), CONSOLE_DESTINATION, force)
    for target, sheets in books.items():
        write_workbook(target, sheets, force)
    for note in dict.fromkeys(notes):
        click.echo(f"note: {note}", err=True)


CONSOLE_DESTINATION = Destination(CONSOLE)


def write_workbook(target: str, sheets: list[tuple[str, Result, int]], force: bool) -> None:
    """One XLSX file of a sheet per result, titled by the name its own file would have (in the
    ratio format of the first)."""
    from asysstats.writing.spreadsheets import workbook  # the runs that write XLSX only

    titles, results, decimals = zip(*sheets)
    with progress(f"writing {target}"):
        deliver(workbook(list(results), decimals[0], list(titles)), Destination(FILE, target), force)


class JsonDocument:
    """Several JSON results to the console as one document: an object of each result's rows
    under its name (the name its file would have: ``<rule>``, ``<report label>_<rule>``,
    ``<rule>_<n>``), written as the results come."""

    def __init__(self) -> None:
        self.started = False

    def key(self, name: str) -> str:
        """What comes before the rows of result ``name``."""
        text = f"{', ' if self.started else '{'}{json.dumps(name, ensure_ascii=False)}: "
        self.started = True
        return text

    def end(self) -> str:
        """What closes the document (``{}`` when no result came)."""
        return "}\n" if self.started else "{}\n"


def destinations(opened: list[Report], rules: list[Rule[Any]], fmts: list[str], outs: list[str | None],
                 force: bool, read: list[Path]) -> list[list[Destination]]:
    """Where each rule's result on each report goes (one, for a comparison of two), found before
    any rule runs: a missing folder, two results bound for one file or one bound for a report
    it ``read``, or a file that is there without ``force`` stops the run before minutes of work
    rather than after (the names: :mod:`asysstats.writing.outputs`)."""
    labels = report_labels([report.path for report in opened])
    names = numbered_rules([rule.name for rule in rules], list(zip(outs, fmts)))
    planned, files = [], []
    books: set[str] = set()  # workbooks: one file for all their results
    for rule, name, fmt, output in zip(rules, names, fmts, outs):
        reports = list(zip(opened, labels))[:1 if rule.reports == 2 else None]
        several = len(reports) > 1  # one output per report: file names name it
        found = [replace(destination(output, report.path, name, fmt, label if several else ""),
                         key="_".join(part for part in (label if several else "", name) if part))
                 for report, label in reports]
        for dest, (report, _) in zip(found, reports):
            if dest.kind == FILE or dest.kind == BOOK and dest.target not in books:
                files.append((Path(dest.target), f"{rule.name} on {report.path}"))
            if dest.kind == BOOK:
                books.add(dest.target)
        planned.append(found)
    check_files(files, read, force)
    return planned
