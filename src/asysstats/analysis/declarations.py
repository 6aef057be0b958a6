"""Rule declarations: a frozen spec (name, title, help, output columns, the tables and columns it
reads, typed options) plus a pure compute function over the inputs and the options.

A rule's options are a frozen dataclass deriving from :class:`Options`, one field per option,
each declared with :meth:`Option.field`: the command line's ``-r rule:name=value`` text and a
Python caller's values are both checked by the same declarations and reach ``compute`` as
that object (``options.hgtx_name``), never as a string-keyed mapping. The registry of rules is
:mod:`asysstats.rulebook`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Mapping, Protocol, Sequence, TypeVar

import numpy as np
import pyarrow as pa

from asysstats.compute.grouped import Key, grouped_stats
from asysstats.core.errors import AsysError, quoted
from asysstats.core.integers import INT64_MAX, INT64_MIN, parse_decimal, parse_int
from asysstats.core.regexes import compile_user_regex
from asysstats.core.result import ASYS, MIRRORS, Column, Frame, Gathered, Result
from asysstats.core.strings import StringPool

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

OPTION = "asysstats.option"  # the metadata key of an options field: its Option
OPTION_KINDS = ("flag", "int", "decimal", "int_list", "choice", "regex", "regex_list", "str_list", "text")
LIST_KINDS = {"int_list": "int", "regex_list": "regex", "str_list": "text"}
Reads = Mapping[str, tuple[str, ...]]  # logical table -> the columns a rule may read of it


# Backslash escapes in option values: a literal ``,`` or ``:`` is written ``\,`` / ``\:`` (and
# ``\\`` for a backslash); other backslashes (regex escapes such as ``\d``) are kept.
def split_unescaped(text: str, sep: str) -> list[str]:
    """Split on ``sep`` not preceded by a backslash; escapes are kept for the next level."""
    parts, current, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ",:\\":
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Option:
    """A rule option: ``flag`` (no value), ``int``, ``decimal`` (a non-negative number, exact, as
    a Fraction), ``choice``, ``regex``, ``text``, or a list of ints, regexes or texts
    (``int_list``, ``regex_list``, ``str_list``: ``/``-separated on the command line, a
    backslash before a ``/`` makes it literal; a list or tuple in Python). Every number lies
    from ``minimum`` to ``maximum``, int64's range unless narrowed, so that no value overflows the int64 columns it meets."""

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: int | None = None  # of an int (or int list) option; None: int64's
    maximum: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in OPTION_KINDS:
            raise ValueError(f"option {self.name}: unknown kind {self.kind}")

    @property
    def attribute(self) -> str:
        """The field of an options object that holds it (``hgtx-name`` -> ``hgtx_name``)."""
        return self.name.replace("-", "_")

    def field(self) -> Any:
        """The dataclass field of an :class:`Options` class declaring this option."""
        return dataclasses.field(default=self.default, metadata={OPTION: self})

    def parse(self, rule: str, raw: str | None) -> Any:
        """The value of the command line's text ``raw`` (None: the option given without a value)."""
        where = f"rule '{rule}': option '{self.name}'"
        if self.kind == "flag":
            if raw is not None and raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise AsysError(f"{where} takes no value, got {quoted(raw)}")
            return raw is None or raw.lower() in ("true", "1", "yes")
        if raw is None or raw == "":
            raise AsysError(f"{where} needs a value ({self.name}=...)")
        if self.kind in LIST_KINDS:  # '\/' is a literal '/' (a regex keeps its escape, '\/' matches '/')
            return tuple(self._item(LIST_KINDS[self.kind], where, part) for part in split_unescaped(raw, "/"))
        return self._item(self.kind, where, raw)

    def check(self, rule: str, value: Any) -> Any:
        """The value of a Python caller's ``value``, checked as the command line's text is
        (the same messages): a bool for a flag, a list or tuple (or one item) for a list."""
        if self.kind == "flag" and isinstance(value, bool):
            return value
        if self.kind in LIST_KINDS and isinstance(value, (list, tuple)):
            where = f"rule '{rule}': option '{self.name}'"
            if not value:
                raise AsysError(f"{where} needs a value ({self.name}=...)")
            return tuple(self._item(LIST_KINDS[self.kind], where, str(item)) for item in value)
        if self.kind in LIST_KINDS:  # one item: a regex or a text keeps its '/'
            return self.check(rule, [value])
        return self.parse(rule, str(value))

    def _item(self, kind: str, where: str, raw: str) -> Any:
        if kind == "int":
            return self._int(where, raw)
        if kind == "decimal":
            return parse_decimal(raw, where, 0 if self.minimum is None else self.minimum,
                                 INT64_MAX if self.maximum is None else self.maximum)
        if kind == "choice":
            if raw not in self.choices:
                raise AsysError(f"{where} must be one of {', '.join(self.choices)}, got {quoted(raw)}")
            return raw
        if kind == "regex":
            return compile_user_regex(raw, where)
        return raw.replace("\\/", "/")

    def _int(self, where: str, raw: str) -> int:
        """An ``int`` item: int64 unless the declaration narrows it (``minimum``, ``maximum``)."""
        return parse_int(raw, where, INT64_MIN if self.minimum is None else self.minimum,
                         INT64_MAX if self.maximum is None else self.maximum)


# Options shared by many rules, declared once.
ROWS = Option("rows", "int", "Maximum number of rows to print (default: all).", None, minimum=1)
BASE = Option("base", "flag", "Use the kernel base name (function name without parameters).", False)
MANGLED = Option("mangled", "flag", "Use the kernel mangled name.", False)
DEVICE = Option("device", "int_list", "PPU device ids to analyse, separated by '/' (default: all).", None, minimum=0,
                maximum=(1 << 31) - 1)  # a device id is a 32-bit index in every profiler's records
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

O = TypeVar("O", bound="Options")


@dataclass(frozen=True)
class Options:
    """The options of a rule, as its ``compute`` reads them. A rule's own class derives from
    this one and declares its options as fields (``rows: int | None = ROWS.field()``), in
    the order its help lists them; ``column``, which every rule takes, is listed last."""

    column: tuple[str, ...] | None = COLUMN.field()

    @classmethod
    def declarations(cls) -> tuple[Option, ...]:
        """The options declared by the fields, in help order."""
        declared = [f.metadata[OPTION] for f in dataclasses.fields(cls)]
        return tuple(o for o in declared if o is not COLUMN) + (COLUMN,)

    def like(self, other: type[O]) -> O:
        """``other``'s options with this object's values of the options both declare (the
        defaults of ``other`` for the rest): a comparison's options for its single rule, a
        rule's options for a helper that reads a few of them."""
        own = {f.name for f in dataclasses.fields(self)}
        return other(**{f.name: getattr(self, f.name) for f in dataclasses.fields(other) if f.name in own})


@dataclass(frozen=True)
class RowsOptions(Options):
    """The options of a rule whose only own option is ``rows``."""

    rows: int | None = ROWS.field()


class KernelNaming(Protocol):
    """The options that choose a kernel's name (``base``, ``mangled``)."""

    @property
    def base(self) -> bool: ...

    @property
    def mangled(self) -> bool: ...


def name_mode(options: KernelNaming) -> str:
    """The kernel name mode chosen by the ``base``/``mangled`` flags."""
    if options.base and options.mangled:
        raise AsysError("options 'base' and 'mangled' exclude each other")
    return "base" if options.base else "mangled" if options.mangled else "demangled"


Stats = dict[str, np.ndarray]  # per-group statistics (asysstats.compute.grouped.grouped_stats)
FrameOf = Callable[["Inputs", O, tuple[np.ndarray, ...], Stats], Frame]


@dataclass(frozen=True)
class Rows:
    """A summary's rows on one report: group keys (integer columns, per row or coded; the
    ones listed in ``text`` are string ids) and the value of each row."""

    keys: tuple[Key, ...]
    values: np.ndarray
    text: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Summary(Generic[O]):
    """A summary rule split in two: ``rows(inputs, options)`` and ``frame(inputs, options,
    group keys, statistics)``, so that over merged reports the statistics can be reduced where
    each report lives (:mod:`asysstats.api.merging.reduce`) and the same ``frame`` makes the table.
    Its rule computes with :meth:`compute` (``compute=SUMMARY.compute``)."""

    rows: Callable[["Inputs", O], Rows]
    frame: FrameOf[O]

    def compute(self, inputs: "Inputs", options: O) -> Frame:
        """The rule over one report: ``frame`` of the statistics of ``rows``."""
        rows = self.rows(inputs, options)
        groups, stats = grouped_stats(rows.keys, rows.values)
        return self.frame(inputs, options, groups.keys, stats)


def merged_reads(*parts: Reads) -> dict[str, tuple[str, ...]]:
    """The union of several declarations of what is read, table by table, in order."""
    out: dict[str, tuple[str, ...]] = {}
    for part in parts:
        for table, columns in part.items():
            out[table] = tuple(dict.fromkeys(out.get(table, ()) + tuple(columns)))
    return out


@dataclass(frozen=True, eq=False)  # a rule is itself: equal to, and hashed as, no other
class Rule(Generic[O]):
    """A rule: what it prints (``columns``), what it reads (``reads``: logical table -> the
    columns it may read; every load outside them is an error), its options class and its
    pure ``compute(inputs, options) -> frame`` (a pair of inputs for a comparison)."""

    name: str
    title: str
    help: str
    columns: tuple[Column, ...]
    compute: Callable[[Any, O], Frame]
    reads: Reads
    options: type[O] = Options  # type: ignore[assignment]  # a rule whose only option is column
    requires: tuple[str, ...] = ()  # error when none of these exist; default: the first table read
    share: str | None = None  # column for the XLSX pie chart (a comparison's: its bar chart of changes)
    optional: Mapping[str, str] = dataclasses.field(default_factory=dict)  # column -> the flag that prints it
    numbered: bool = True  # Row# in CSV and console tables (False: the reference's example has none)
    label: str | None = None  # column naming the chart's rows (None: the first text column)
    command: str = "stats"  # stats | analyze
    reports: int = 1  # 2 for comparison rules
    mirrors: str = ASYS  # NSYS_STATS: an `nsys stats` report, written in NVIDIA's formats (docs/decisions.md D31)
    COMMANDS: ClassVar[tuple[str, ...]] = ("stats", "analyze")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self.options):
            option = f.metadata.get(OPTION)
            if option is None or option.attribute != f.name:
                raise ValueError(f"rule {self.name}: options field {f.name} is not declared by Option.field()")
        names = [o.name for o in self.all_options]
        if len(set(names)) != len(names):
            raise ValueError(f"rule {self.name}: duplicate option")
        if self.command not in self.COMMANDS:
            raise ValueError(f"rule {self.name}: unknown command {self.command}")
        if self.mirrors not in MIRRORS:
            raise ValueError(f"rule {self.name}: mirrors an unknown tool {self.mirrors}")
        for column, flag in self.optional.items():
            if column not in {c.name for c in self.columns} or flag not in {f.name for f in
                                                                          dataclasses.fields(self.options)}:
                raise ValueError(f"rule {self.name}: optional column {column} needs a column and a flag {flag}")

    @property
    def all_options(self) -> tuple[Option, ...]:
        return self.options.declarations()

    @property
    def summary(self) -> "Summary[O] | None":
        """The rows/frame split of a summary rule: the ``Summary`` whose ``compute`` it computes with."""
        owner = getattr(self.compute, "__self__", None)
        return owner if isinstance(owner, Summary) else None

    @property
    def required_tables(self) -> tuple[str, ...]:
        return self.requires or tuple(self.reads)[:1]

    def option(self, name: str) -> Option:
        """The option called ``name`` (``hgtx-name``; ``hgtx_name`` as a Python keyword)."""
        for opt in self.all_options:
            if name in (opt.name, opt.attribute):
                return opt
        known = ", ".join(o.name for o in self.all_options)
        raise AsysError(f"rule '{self.name}': unknown option {quoted(name)} (options: {known})")

    def parse_options(self, given: Mapping[str, str | None]) -> O:
        """The options of the command line's ``-r rule:name=value:flag`` text."""
        values = {}
        for key, raw in given.items():
            option = self.option(key)
            values[option.attribute] = option.parse(self.name, raw)
        return self.options(**values)

    def options_of(self, given: Mapping[str, Any]) -> O:
        """The options of a Python caller's values (``rows=10``, ``device=[0, 1]``); None
        leaves an option at its default."""
        values = {}
        for key, value in given.items():
            option = self.option(key)
            if value is not None:
                values[option.attribute] = option.check(self.name, value)
        return self.options(**values)

    def shaped(self, options: O, frame: Frame, strings: StringPool, notes: Sequence[str] = ()) -> Result:
        """The computed ``frame`` as a result: declared columns, then the ``rows`` and ``column``
        options; ``notes``: the run's data-quality notes."""
        missing = [c.name for c in self.columns if c.name not in frame]
        if missing:
            raise AssertionError(f"rule {self.name} did not compute columns {missing}")
        frame = {c.name: frame[c.name] if isinstance(frame[c.name], (pa.Array, Gathered))
                 else np.asarray(frame[c.name]) for c in self.columns}
        rows = getattr(options, "rows", None)  # the option of the rules that take it; -1: no limit (nsys analyze)
        if rows is not None and rows >= 0:
            frame = {k: v[:rows] for k, v in frame.items()}
        columns = self.select_columns(options.column, options)
        return Result(self.name, self.title, self.share, columns, {c.name: frame[c.name] for c in columns}, strings,
                      tuple(dict.fromkeys(notes)), self.label, self.numbered, self.mirrors)

    def select_columns(self, wanted: tuple[str, ...] | None, options: Options | None = None) -> tuple[Column, ...]:
        """The columns named by the ``column`` option (any case), in its order; without it all
        but the ``optional`` ones whose flag ``options`` leaves off."""
        if not wanted:
            return tuple(c for c in self.columns
                         if c.name not in self.optional or getattr(options, self.optional[c.name], False))
        by_key = {c.name.lower(): c for c in self.columns}
        chosen = []
        for name in wanted:
            col = by_key.get(name.strip().lower())
            if col is None:
                names = ", ".join(c.name for c in self.columns)
                raise AsysError(f"rule '{self.name}': option 'column': unknown column {quoted(name)} "
                                f"(columns: {names})")
            chosen.append(col)
        return tuple(chosen)
