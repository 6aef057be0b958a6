"""What a rule's compute reads: one report's tables inside the analysis window, and the run's settings.

A rule reads the report only through :class:`Inputs`, and only what it declares it reads
(:attr:`asysstats.analysis.declarations.Rule.reads`): a table or column outside its
declaration is an error, and a table asked for without columns is read with the declared
ones. The engine's own reads (the capture range, suspect events, ``--filter-hgtx`` windows)
are not the rule's and are not checked."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Sequence, TypeVar

import numpy as np

from asysstats.analysis.declarations import Reads
from asysstats.analysis.suspects import without_suspect_events
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable, empty_table, in_window
from asysstats.reading.schema import NSYS, TABLES, derived_names, missing_data

if TYPE_CHECKING:
    from asysstats.reading.protocol import ReportSource

INT64_MAX = np.iinfo(np.int64).max
T = TypeVar("T")
PPU_SIDE_TABLES = ("kernels", "memcpy", "memset", "metrics")  # windowed by the --filter-hgtx projection
LAUNCHED_TABLES = ("kernels", "memcpy", "memset")  # activities an API call launches (Settings.linked_only)
Window = tuple[int, int]


@dataclass(frozen=True)
class Settings:
    """Run-wide settings that rules may read (time window, grouping configurations)."""

    filter_time: tuple[int | None, int | None] | None = None
    filter_hgtx: str | None = None
    range_filter: str = "--filter-hgtx"  # the option that gave filter_hgtx: its messages name it (or --filter-nvtx)
    callstack_groups: tuple[tuple[str, str], ...] = ()
    ppu_op_config: tuple[tuple[str, str], ...] = ()
    kernel_groups: tuple[tuple[str, str], ...] = ()
    keep_suspect_events: bool = False  # else tables leave out suspect events (asysstats.analysis.suspects)
    linked_only: bool = False  # PPU activities only with their launching API call in the report (Inputs.table)
    device_specs: tuple[Any, ...] = ()  # --device-spec entries (asysstats.analysis.operators.catalog.DeviceSpec)
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """Ranges that one report of a merged set takes from the whole set (its analysis range,
    the windows of ``--filter-time``/``--filter-hgtx``); None: the report's own."""

    capture: Window | None
    window: Window | None
    ppu_window: Window | None


@dataclass
class Windows:
    """The time windows of a report under the run's settings, found once and shared by every
    rule's view of the report (``False``: not found yet)."""

    cpu: Window | None | bool = False
    ppu: Window | None | bool = False


class Inputs:
    """What a compute function reads: one report's tables inside the analysis window.

    ``reads`` (with the ``rule`` that declares them) bounds what it may read; ``None``: the
    engine's view, which reads anything. :meth:`for_rule` gives a rule its view of the same
    report, sharing the windows, the notes and what rules share (:meth:`shared`)."""

    def __init__(self, report: ReportSource, settings: Settings = Settings(), scope: Scope | None = None,
                 reads: Reads | None = None, rule: str = "") -> None:
        self.report = report  # the engine's (asysstats.analysis); rules read through the methods below
        self.settings = settings
        self.strings: StringPool = report.strings
        self.scope = scope
        self.reads = reads
        self.rule = rule
        self.notes: list[str] = []  # one-line data-quality notes; the CLI prints them after the run
        self._shared: dict[Hashable, Any] = {}
        self._windows = Windows(scope.window, scope.ppu_window) if scope else Windows()

    def for_rule(self, rule: str, reads: Reads | None) -> "Inputs":
        """The view of rule ``rule``, which reads ``reads``."""
        view = Inputs(self.report, self.settings, self.scope, reads, rule)
        view.notes, view._shared, view._windows = self.notes, self._shared, self._windows
        return view

    def engine(self) -> "Inputs":
        """The engine's view of the same report: it reads anything."""
        return self.for_rule("", None) if self.reads is not None else self

    def shared(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, made once per ``key`` for these inputs: what several rules of a run read
        alike (the operators of a report, for the three operator comparisons)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    # -- what the report is ------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.report.path

    @property
    def dialect(self) -> str:
        return self.report.dialect

    def has(self, name: str) -> bool:
        return self.report.has(name)

    def require(self, *names: str) -> None:
        if not any(self.report.has(n) for n in names):
            raise missing_data(self.report, names[0])

    # -- what a rule reads ---------------------------------------------------------------
    def reading(self, name: str, columns: Sequence[str] = ()) -> tuple[str, ...]:
        """The columns of table ``name`` the rule reads: ``columns``, checked against its
        declaration, or without them the declared ones (every column of an undeclared view)."""
        if self.reads is None:
            return tuple(columns) or tuple(c.name for c in TABLES[name].columns)
        declared = self.reads.get(name)
        undeclared = [c for c in columns if declared is None or c not in declared]
        if declared is None or undeclared:
            what = ", ".join(f"{name}.{c}" for c in undeclared) if undeclared else f"table {name}"
            raise AssertionError(f"rule {self.rule} reads {what}, which it does not declare")
        return tuple(columns) or declared

    def table(self, name: str, columns: Sequence[str] = ()) -> EventTable:
        """The table inside the time window, without suspect events (an empty one when absent);
        with ``linked_only``, PPU activities without their launching API call are left out too."""
        cols = self.reading(name, columns)
        if not self.report.has(name):
            floats = frozenset(c.name for c in TABLES[name].columns if c.kind == "float")
            return empty_table(list(cols) + derived_names(list(cols)), floats)
        table = self.report.load(name, cols)
        table = without_suspect_events(self, name, table, keep=self.settings.keep_suspect_events)
        if self.settings.linked_only and name in LAUNCHED_TABLES:
            table = table.take(self.shared(("launched", name), lambda: self._launched(name)))
        window = self.ppu_window if name in PPU_SIDE_TABLES else self.window
        return in_window(table, window)

    def _launched(self, name: str) -> np.ndarray:
        """Per row of activity table ``name`` (without its suspect events, as :meth:`table`
        loads it): whether its launching API call is in the report; a note of those that are not."""
        from asysstats.analysis.launches import launch_rows, runtime_calls  # the linked-only runs alone

        engine = self.engine()
        activities = without_suspect_events(engine, name, self.report.load(name, ("correlationId", "globalPid")),
                                            keep=self.settings.keep_suspect_events)
        launched = launch_rows(runtime_calls(engine), activities) >= 0
        if not launched.all():
            self.notes.append(f"{self.path.name}: {int((~launched).sum())} {name} rows without their launching "
                              "API call in the report left out (linked only)")
        return launched

    def whole(self, name: str, columns: Sequence[str] = ()) -> EventTable:
        """The table of the whole report, every row (what activities are looked up in: their
        launch calls, graph nodes); raises :class:`MissingData` when absent."""
        return self.report.load(name, self.reading(name, columns))

    def derived(self, name: str, columns: Sequence[str], text: Sequence[str],
                build: Callable[[], Mapping[str, np.ndarray]]) -> EventTable:
        """A table computed from the report (see :meth:`ReportSource.derived`)."""
        return self.report.derived(name, columns, text, build)

    def transient(self) -> contextlib.AbstractContextManager[None]:
        """A block whose loads the report need not keep (see :meth:`ReportSource.transient`)."""
        return self.report.transient()

    # -- the analysis range and the time windows ---------------------------------------
    def capture_range(self) -> Window:
        """The report's analysis range: ``ANALYSIS_DETAILS``, else the span of its activities.

        Nsight Systems stores event times relative to the session start, while its
        ``ANALYSIS_DETAILS.startTime``/``stopTime`` are on another clock: there the range is
        ``[0, duration)``."""
        if self.scope is not None and self.scope.capture is not None:
            return self.scope.capture
        if self.report.has("analysis"):
            info = self.report.load("analysis")
            if info.rows and self.report.dialect == NSYS and info["duration"][0] > 0:
                return 0, int(info["duration"][0])
            if info.rows and info["stopTime"][0] > info["startTime"][0]:
                return int(info["startTime"][0]), int(info["stopTime"][0])
        lo, hi = [], []
        for name in ("kernels", "memcpy", "memset", "runtime", "hgtx", "osrt"):
            if self.report.has(name):
                t = self.report.load(name, ("start", "end"))
                if t.rows:
                    lo.append(int(t["start"].min()))
                    hi.append(int(max(t["end"].max(), t["start"].max())))
        return (min(lo), max(hi)) if lo else (0, 0)

    @property
    def window(self) -> Window | None:
        """Absolute ``[start, end]`` of ``--filter-time`` (ns offsets from capture start), or
        the span of the ``--filter-hgtx`` range."""
        if self._windows.cpu is False:
            self._windows.cpu = None
            if self.settings.filter_hgtx:
                self._find_hgtx_windows()
            elif self.settings.filter_time is not None:
                origin = self.capture_range()[0]
                lo, hi = self.settings.filter_time
                self._windows.cpu = (origin + (lo or 0), origin + hi if hi is not None else INT64_MAX)
        return self._windows.cpu  # type: ignore[return-value]

    @property
    def ppu_window(self) -> Window | None:
        """The window of PPU-side tables: ``--filter-hgtx`` projects the range onto the PPU."""
        if not self.settings.filter_hgtx:
            return self.window
        if self._windows.ppu is False:
            self._find_hgtx_windows()
        return self._windows.ppu  # type: ignore[return-value]

    def _find_hgtx_windows(self) -> None:
        from asysstats.analysis.correlate import filter_windows  # the runs with --filter-hgtx only

        self._windows.cpu, self._windows.ppu = filter_windows(self.engine(), self.settings.filter_hgtx or "")

    def full_range(self) -> Window:
        """The ``full`` range mode: the filter window, else the capture range."""
        capture = self.capture_range()
        window = self.window
        if window is None:
            return capture
        return window[0], window[1] if window[1] != INT64_MAX else max(capture[1], window[0])
