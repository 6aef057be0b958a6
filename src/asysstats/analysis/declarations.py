"""Rule declarations: a frozen spec (name, options, output columns, tables read, help)
plus a pure compute function (the registry of rules is :mod:`asysstats.rules.registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np
import pyarrow as pa

from asysstats.core.columns import Column, Frame
from asysstats.core.errors import AsysError
from asysstats.core.regexes import compile_user_regex
from asysstats.core.result import Gathered, Result
from asysstats.core.strings import StringPool

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs
    from asysstats.analysis.summary import Summary

@dataclass(frozen=True)
class Option:
    """A rule option: ``flag`` (no value), ``int``, ``choice``, ``regex``, ``int_list``,
    ``regex_list`` (``/``-separated), ``str_list`` or ``text``."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: int | None = None

    def parse(self, rule: str, raw: str | None) -> Any:
        where = f"rule '{rule}': option '{self.name}'"
        if self.kind == "flag":
            if raw is not None and raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise AsysError(f"{where} takes no value, got {raw!r}")
            return raw is None or raw.lower() in ("true", "1", "yes")
        if raw is None or raw == "":
            raise AsysError(f"{where} needs a value ({self.name}=...)")
        if self.kind == "int":
            return self._int(where, raw)
        if self.kind == "int_list":
            return tuple(self._int(where, part) for part in raw.split("/"))
        if self.kind == "choice":
            if raw not in self.choices:
                raise AsysError(f"{where} must be one of {', '.join(self.choices)}, got {raw!r}")
            return raw
        if self.kind == "regex":
            return compile_user_regex(raw, where)
        if self.kind == "regex_list":
            return tuple(compile_user_regex(part, where) for part in raw.split("/"))
        if self.kind == "str_list":
            return tuple(raw.split("/"))
        return raw

    def _int(self, where: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            bound = f" >= {self.minimum}" if self.minimum is not None else ""
            raise AsysError(f"{where} must be an integer{bound}, got {raw!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise AsysError(f"{where} must be an integer >= {self.minimum}, got {raw!r}")
        return value


# Options shared by many rules, declared once.
ROWS = Option("rows", "int", "Maximum number of rows to print (default: all).", None, minimum=1)
BASE = Option("base", "flag", "Use the kernel base name (function name without parameters).", False)
MANGLED = Option("mangled", "flag", "Use the kernel mangled name.", False)
DEVICE = Option("device", "int_list", "PPU device ids to analyse, separated by '/' (default: all).", None, minimum=0)
HGTX_NAME = Option("hgtx-name", "flag",
                   "Prefix the kernel name with the innermost HGTX range enclosing its launch, separated by '/'.", False)
COLUMN = Option("column", "str_list", "Print only these columns, separated by '/'.", None)
RANGE_MODE = Option("range-mode", "choice",
                    "Time range: 'active' (first to last PPU activity) or 'full' (filter range or whole report).",
                    "active", choices=("active", "full"))
RANGE_INCLUDE = Option("range-include", "regex_list", "Analyse only HGTX ranges matching one of these regexes ('/').", None)
RANGE_EXCLUDE = Option("range-exclude", "regex_list", "Skip HGTX ranges matching one of these regexes ('/').", None)
NO_GRAPH_MAPPING = Option("no-graph-mapping", "flag",
                          "Do not map HGTX ranges around graph-node creation to the graph's PPU activities.", False)
NAME_OPTIONS = (BASE, MANGLED)


def name_mode(options: Mapping[str, Any]) -> str:
    """The kernel name mode chosen by the ``base``/``mangled`` flags."""
    if options.get("base") and options.get("mangled"):
        raise AsysError("options 'base' and 'mangled' exclude each other")
    return "base" if options.get("base") else "mangled" if options.get("mangled") else "demangled"


Compute = Callable[["Inputs", Mapping[str, Any]], Frame]


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    help: str
    columns: tuple[Column, ...]
    compute: Compute
    reads: tuple[str, ...]
    options: tuple[Option, ...] = ()
    requires: tuple[str, ...] = ()  # error when none of these exist; default: the first table read
    share: str | None = None  # column for the XLSX pie chart
    command: str = "stats"  # stats | analyze
    reports: int = 1  # 2 for comparison rules
    all_options: tuple[Option, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        opts = self.options + (COLUMN,)
        if len({o.name for o in opts}) != len(opts):
            raise ValueError(f"rule {self.name}: duplicate option")
        object.__setattr__(self, "all_options", opts)

    @property
    def summary(self) -> "Summary | None":
        """The rows/frame split of a summary rule: the ``Summary`` whose ``compute`` it computes with."""
        from asysstats.analysis.summary import Summary  # it imports this module

        owner = getattr(self.compute, "__self__", None)
        return owner if isinstance(owner, Summary) else None

    @property
    def required_tables(self) -> tuple[str, ...]:
        return self.requires or self.reads[:1]

    def option(self, name: str) -> Option:
        for opt in self.all_options:
            if opt.name == name:
                return opt
        known = ", ".join(o.name for o in self.all_options)
        raise AsysError(f"rule '{self.name}': unknown option '{name}' (options: {known})")

    def parse_options(self, given: Mapping[str, str | None]) -> dict[str, Any]:
        values = {o.name: o.default for o in self.all_options}
        for key, raw in given.items():
            values[key] = self.option(key).parse(self.name, raw)
        return values

    def shaped(self, options: Mapping[str, Any], frame: Frame, strings: StringPool) -> Result:
        """The computed ``frame`` as a result: declared columns, then the ``rows`` and ``column`` options."""
        missing = [c.name for c in self.columns if c.name not in frame]
        if missing:
            raise AssertionError(f"rule {self.name} did not compute columns {missing}")
        frame = {c.name: frame[c.name] if isinstance(frame[c.name], (pa.Array, Gathered))
                 else np.asarray(frame[c.name]) for c in self.columns}
        rows = options.get("rows")
        if rows is not None:
            frame = {k: v[:rows] for k, v in frame.items()}
        columns = self.select_columns(options.get("column"))
        return Result(self.name, self.title, self.share, columns, {c.name: frame[c.name] for c in columns}, strings)

    def select_columns(self, wanted: tuple[str, ...] | None) -> tuple[Column, ...]:
        """The columns named by the ``column`` option (any case), in its order; all without it."""
        if not wanted:
            return self.columns
        by_key = {c.name.lower(): c for c in self.columns}
        chosen = []
        for name in wanted:
            col = by_key.get(name.strip().lower())
            if col is None:
                names = ", ".join(c.name for c in self.columns)
                raise AsysError(f"rule '{self.name}': option 'column': unknown column {name!r} (columns: {names})")
            chosen.append(col)
        return tuple(chosen)
