"""What a rule's compute reads: one report's tables inside the analysis window, and the run's settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, TypeVar

import numpy as np

from asysstats.analysis.suspects import without_suspect_events
from asysstats.core.errors import MissingData
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable, empty_table, in_window
from asysstats.reading.schema import NSYS, TABLES, derived_names
from asysstats.reading.sqlite import Report

INT64_MAX = np.iinfo(np.int64).max
T = TypeVar("T")
PPU_SIDE_TABLES = ("kernels", "memcpy", "memset", "metrics")  # windowed by the --filter-hgtx projection


@dataclass(frozen=True)
class Settings:
    """Run-wide settings that rules may read (time window, grouping configurations)."""

    filter_time: tuple[int | None, int | None] | None = None
    filter_hgtx: str | None = None
    callstack_groups: tuple[tuple[str, str], ...] = ()
    ppu_op_config: tuple[tuple[str, str], ...] = ()
    kernel_groups: tuple[tuple[str, str], ...] = ()
    keep_suspect_events: bool = False  # else tables leave out suspect events (asysstats.analysis.suspects)
    device_specs: tuple[Any, ...] = ()  # --device-spec entries (asysstats.analysis.operators.catalog.DeviceSpec)
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """Ranges that one report of a merged set takes from the whole set (its analysis range,
    the windows of ``--filter-time``/``--filter-hgtx``); None: the report's own."""

    capture: tuple[int, int] | None
    window: tuple[int, int] | None
    ppu_window: tuple[int, int] | None


class Inputs:
    """What a compute function reads: one report's tables inside the analysis window."""

    def __init__(self, report: Report, settings: Settings = Settings(), scope: Scope | None = None) -> None:
        self.report = report
        self.settings = settings
        self.strings: StringPool = report.strings
        self.scope = scope
        self._window: tuple[int, int] | None | bool = scope.window if scope else False
        self._hgtx: tuple[tuple[int, int], tuple[int, int]] | None = \
            (scope.window, scope.ppu_window) if scope and settings.filter_hgtx else None  # type: ignore[assignment]
        self.notes: list[str] = []  # one-line data-quality notes; the CLI prints them after the run
        self._shared: dict[Hashable, Any] = {}

    def shared(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, made once per ``key`` for these inputs: what several rules of a run read
        alike (the operators of a report, for the three operator comparisons)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    def has(self, name: str) -> bool:
        return self.report.has(name)

    def table(self, name: str, columns: tuple[str, ...] = ()) -> EventTable:
        """The table (restricted to the time window), or an empty one when absent."""
        if not self.report.has(name):
            spec = TABLES[name]
            cols = list(columns) or [c.name for c in spec.columns]
            floats = frozenset(c.name for c in spec.columns if c.kind == "float")
            return empty_table(cols + derived_names(cols), floats)
        table = self.report.load(name, columns)
        if not self.settings.keep_suspect_events:
            table = without_suspect_events(self, name, table)
        window = self.ppu_window if name in PPU_SIDE_TABLES else self.window
        return in_window(table, window)

    def require(self, *names: str) -> None:
        if not any(self.report.has(n) for n in names):
            raise MissingData(self.report.missing_message(names[0]))

    def capture_range(self) -> tuple[int, int]:
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
    def window(self) -> tuple[int, int] | None:
        """Absolute ``[start, end]`` of ``--filter-time`` (ns offsets from capture start)."""
        if self._window is False:
            self._window = None
            if self.settings.filter_hgtx:
                self._window = self._hgtx_windows()[0]
            elif self.settings.filter_time is not None:
                origin = self.capture_range()[0]
                lo, hi = self.settings.filter_time
                self._window = (origin + (lo or 0), origin + hi if hi is not None else INT64_MAX)
        return self._window  # type: ignore[return-value]

    @property
    def ppu_window(self) -> tuple[int, int] | None:
        """The window of PPU-side tables: ``--filter-hgtx`` projects the range onto the PPU."""
        return self._hgtx_windows()[1] if self.settings.filter_hgtx else self.window

    def _hgtx_windows(self) -> tuple[tuple[int, int], tuple[int, int]]:
        if self._hgtx is None:
            from asysstats.analysis.correlate import filter_windows

            self._hgtx = filter_windows(self.report, self.settings.filter_hgtx)
        return self._hgtx

    def full_range(self) -> tuple[int, int]:
        """The ``full`` range mode: the filter window, else the capture range."""
        capture = self.capture_range()
        window = self.window
        if window is None:
            return capture
        return window[0], window[1] if window[1] != INT64_MAX else max(capture[1], window[0])
