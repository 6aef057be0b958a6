"""Opened reports: :func:`open`, the run settings it takes (:func:`settings_of`), and the
:class:`Report` it gives, whose rule tables are ``pyarrow.Table``\\ s. The command line opens
its reports and runs its rules here.

The merging machinery (:mod:`~asysstats.reading.merged.report`, ``cluster``,
:mod:`~asysstats.api.merging`) is imported when reports are merged or shifted: a plain
single-report run does not pay for its import.
"""

from __future__ import annotations

import os
import pathlib
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, TypeVar

import pyarrow as pa

from asysstats.analysis.declarations import Options, Rule
from asysstats.analysis.inputs import Inputs, Settings
from asysstats.api.running import run_rule
from asysstats.core.errors import AsysError, quoted
from asysstats.core.integers import checked_int
from asysstats.core.result import Result
from asysstats.reading.opening import open_report
from asysstats.rulebook import find_rule

if TYPE_CHECKING:
    from asysstats.reading.protocol import ReportSource

O = TypeVar("O", bound=Options)
PathLike = str | os.PathLike[str]
Runner = Callable[[Rule[Any], Any, Inputs], Result]
TS_SHIFT_MAX = 1 << 62  # ns (146 years) either way: a shifted timestamp below 2**62 still fits int64


class Note(UserWarning):
    """A data-quality note of a rule's run (events left out, devices without peak figures)."""


class Report:
    """An opened report, or a set of reports merged into one: the tables of its rules.

    A context manager; its tables are ``pyarrow.Table`` (:mod:`asysstats.api.tables`)."""

    def __init__(self, source: ReportSource, settings: Settings, merged: bool = False) -> None:
        self.source = source
        self.settings = settings
        self.merged = merged  # a set of reports, each rule reduced where its reports live
        self.skipped: list[str] = list(getattr(source, "skipped", ()))  # reports left out (skip_bad_reports)

    def __repr__(self) -> str:
        return f"<asysstats.Report {self.path}>"

    def __enter__(self) -> "Report":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> pathlib.Path:
        """The file (for merged reports: the name their outputs take)."""
        return self.source.path

    def stats(self, rule: str, **options: Any) -> pa.Table:
        """The table of ``asys stats`` rule ``rule`` with ``options`` (Python values:
        ``rows=10``, ``base=True``, ``device=[0, 1]``, ``range_include=["^aten"]``)."""
        return self._table(rule, "stats", options)

    def analyze(self, rule: str, **options: Any) -> pa.Table:
        """The table of ``asys analyze`` rule ``rule`` (``ppu_gaps``, ``ppu_time_util``) with ``options``."""
        return self._table(rule, "analyze", options)

    def _table(self, name: str, command: str, options: dict[str, Any]) -> pa.Table:
        rule = find_rule(name, command)
        if rule.reports == 2:
            raise AsysError(f"rule '{rule.name}' compares two reports; use asysstats.compare(base, target)")
        result = self.run(rule, rule.options_of(options))
        for note in result.notes:
            warnings.warn(note, Note, stacklevel=3)
        from asysstats.api.tables import arrow_table  # a Python caller's: not the command line's start-up

        return arrow_table(result)

    def inputs(self) -> Inputs:
        """A fresh view of the report for rules to read under its settings."""
        return Inputs(self.source, self.settings)

    def run(self, rule: Rule[O], options: O, inputs: Inputs | None = None) -> Result:
        """The result of ``rule`` on this report, as the writers stream it (``inputs``: a view
        several rules share, else a fresh one)."""
        inputs = self.inputs() if inputs is None else inputs
        if self.merged:
            from asysstats.api.merging.hosts import check_mergeable, run_merged

            check_mergeable(rule)
            return run_merged(rule, options, inputs)
        return run_rule(rule, options, inputs)

    def close(self) -> None:
        self.source.close()


def open(path: PathLike | Sequence[PathLike], *, cache: bool = True, merge: bool = False, scheduler: str | None = None,
         skip_bad_reports: bool = False, ts_normalize: bool = False, ts_shift: int | Sequence[int] = 0,
         **settings: Any) -> Report:
    """Open a report: an asysrep or Nsight Systems SQLite export, or a PyTorch profiler (Kineto)
    trace (``.json``, ``.json.gz``). Several paths with ``merge=True`` are one merged report
    (``--merge-reports``, on Dask: ``scheduler`` a ``tcp://host:port``, else a local cluster).

    ``cache``: keep the columns read in the columnar cache. ``ts_normalize``: timestamps as UTC
    ns; ``ts_shift``: ns added to the timestamps (one per path). ``settings``: ``filter_time``,
    ``filter_hgtx`` (or ``filter_nvtx``), ``kernel_groups``, ``ppu_op_config``, ``callstack_groups``, ``device_spec``,
    ``keep_suspect_events``, ``linked_only`` (:func:`settings_of`)."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise AsysError("asysstats.open: no report given")
    if len(paths) > 1 and not merge:
        raise AsysError(f"asysstats.open: {len(paths)} reports; merge=True reads them as one, or open each")
    if scheduler and not merge:
        raise AsysError("scheduler runs merged reports on a cluster; it needs merge=True")
    shifts = clock_shifts(ts_shift)
    run_settings = settings_of(**settings)
    if not (merge or ts_normalize or any(shifts)):
        return Report(open_report(paths[0], cache=cache), run_settings)
    from asysstats.reading.merged.cluster import DaskExecutor, InlineExecutor
    from asysstats.reading.merged.report import open_merged

    names = [os.fspath(p) for p in paths]
    executor = DaskExecutor(scheduler) if merge else InlineExecutor()
    try:
        source = open_merged(names, executor, cache, ts_normalize, shifts, skip_bad_reports)
    except BaseException:
        executor.close()
        raise
    return Report(source, run_settings, merged=merge)


def clock_shifts(ts_shift: int | Sequence[int]) -> tuple[int, ...]:
    """``ts_shift`` checked: ns, an integer or one per report, each within ``TS_SHIFT_MAX``."""
    shifts = (ts_shift,) if isinstance(ts_shift, int) else ts_shift
    if isinstance(shifts, (str, bytes)) or not isinstance(shifts, Sequence) or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in shifts):
        raise AsysError(f"ts_shift {quoted(ts_shift)}: expected ns, an integer or a list of one per report")
    return tuple(checked_int(shift, "ts_shift", -TS_SHIFT_MAX, TS_SHIFT_MAX) for shift in shifts)


Pairs = Mapping[str, str] | Iterable[tuple[str, str]]


def settings_of(*, filter_time: tuple[int | None, int | None] | None = None, filter_hgtx: str | None = None,
                filter_nvtx: str | None = None, kernel_groups: Pairs = (), ppu_op_config: Pairs = (),
                callstack_groups: Pairs = (), device_spec: str | os.PathLike[str] | None = None,
                keep_suspect_events: bool = False, linked_only: bool = False) -> Settings:
    """``filter_time``: ``(start, end)`` ns from the start of the capture (either None: open);
    ``filter_hgtx``: ``range[@domain][/index]``, or nsys's ``filter_nvtx``:
    ``range[@domain][/index[/count]]``; ``kernel_groups`` (``name -> regex``),
    ``ppu_op_config`` (``type -> kernel:<regex>`` or ``hgtx:<regex>``), ``callstack_groups``
    (``group -> frame_re/frame_re``): a mapping, or ``(name, value)`` pairs where a name
    repeats; ``device_spec``: a JSON file of device peaks; ``keep_suspect_events``;
    ``linked_only``: PPU activities only with their launching API call in the report (the
    others, launched before the profiling window, left out of every rule)."""
    specs: tuple[Any, ...] = ()
    if device_spec is not None:
        from asysstats.analysis.operators.catalog import read_device_spec  # operator modules: start-up time

        specs = read_device_spec(os.fspath(device_spec))
    if filter_hgtx and filter_nvtx:
        raise AsysError("filter_nvtx and filter_hgtx (--filter-nvtx, --filter-hgtx) name one filter: give one")
    return Settings(filter_time=time_window(filter_time), filter_hgtx=filter_hgtx or filter_nvtx,
                    range_filter="--filter-nvtx" if filter_nvtx else "--filter-hgtx",
                    callstack_groups=pairs(callstack_groups, "callstack_groups"),
                    ppu_op_config=pairs(ppu_op_config, "ppu_op_config"),
                    kernel_groups=pairs(kernel_groups, "kernel_groups"),
                    keep_suspect_events=bool(keep_suspect_events), device_specs=specs,
                    linked_only=bool(linked_only))


def time_window(window: tuple[int | None, int | None] | None) -> tuple[int | None, int | None] | None:
    """``filter_time`` checked: two integers or None, the end not before the start."""
    if window is None:
        return None
    if not isinstance(window, (tuple, list)) or len(window) != 2 or \
            not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in window):
        raise AsysError(f"filter_time {quoted(window)}: expected (start, end) in ns, each an integer or None")
    start, end = (None if v is None else checked_int(v, f"filter_time: the {side} (ns)")
                  for side, v in zip(("start", "end"), window))
    if start is not None and end is not None and end < start:
        raise AsysError(f"filter_time {quoted(window)}: end is before start")
    return start, end


def pairs(given: Pairs, what: str) -> tuple[tuple[str, str], ...]:
    """``name=value`` configuration items: a mapping or pairs, names and values non-empty text."""
    items = list(given.items()) if isinstance(given, Mapping) else list(given)
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and all(isinstance(v, str) and v for v in item)):
            raise AsysError(f"{what}: expected name/value pairs of text, got {quoted(item)}")
    return tuple((name.strip(), value) for name, value in items)
