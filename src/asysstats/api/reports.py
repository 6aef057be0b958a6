"""The command line's view of many reports: how they are opened and how a rule runs on them.

The merging machinery (:mod:`~asysstats.reading.merged.report`, ``cluster``, ``hosts``) is imported when a
run merges or shifts reports: a plain single-report run does not pay for its import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from asysstats.analysis.declarations import Rule
from asysstats.api.running import run_rule
from asysstats.core.errors import AsysError
from asysstats.reading.opening import open_report


@dataclass(frozen=True)
class ManyOptions:
    """``--merge-reports``, ``--ts-normalize``, ``--ts-shift``, ``--scheduler``, ``--skip-bad-reports``."""

    merge: bool = False
    normalize: bool = False
    shifts: tuple[int, ...] = ()
    scheduler: str | None = None
    skip_bad: bool = False

    def check(self, rules: Sequence[Rule]) -> None:
        if self.scheduler and not self.merge:
            raise AsysError("--scheduler runs merged reports on a cluster; it needs --merge-reports")
        if self.merge:
            from asysstats.api.merging.hosts import check_mergeable

            for rule in rules:
                check_mergeable(rule)

    def runner(self) -> Callable:
        if not self.merge:
            return run_rule
        from asysstats.api.merging.hosts import run_merged

        return run_merged


def open_reports(paths: Sequence[str], many: ManyOptions, cache: bool, warn: Callable[[str], None],
                 open_one: Callable = open_report) -> list:
    """The reports a run reads: one merged report, or one per path (``open_one``; clocks
    shifted when asked)."""
    if many.merge or many.normalize or any(many.shifts):
        from asysstats.reading.merged.cluster import DaskExecutor, InlineExecutor
        from asysstats.reading.merged.report import open_merged
    if many.merge:
        executor = DaskExecutor(many.scheduler)
        try:
            merged = open_merged(paths, executor, cache, many.normalize, many.shifts, many.skip_bad)
        except BaseException:
            executor.close()
            raise
        for message in merged.skipped:
            warn(f"skipped: {message}")
        return [merged]
    shifts = list(many.shifts) + [many.shifts[-1] if many.shifts else 0] * max(0, len(paths) - len(many.shifts))
    opened = []
    for path, shift in zip(paths, shifts):
        try:
            if many.normalize or shift:
                opened.append(open_merged([path], InlineExecutor(), cache, many.normalize, [shift]))
            else:
                opened.append(open_one(path, cache=cache))
        except AsysError as exc:
            if not many.skip_bad:
                raise
            warn(f"skipped: {exc}")
    if not opened:
        raise AsysError(f"none of the {len(paths)} reports could be read")
    return opened


def close_reports(reports: Sequence) -> None:
    for report in reports:
        report.close()
