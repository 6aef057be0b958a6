"""Rule declarations: a frozen spec (name, options, output columns, tables read, help)
plus a pure compute function. The registry maps names to rules; duplicates fail at import."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from asysstats.errors import AsysError
from asysstats.regexes import compile_user_regex

if TYPE_CHECKING:
    from asysstats.engine import Inputs
    from asysstats.rules.summary import Summary

# Column kinds: how writers format a column (never the rules).
INT = "int"          # ns, bytes, counts, ids; floats are truncated toward zero
PERCENT = "percent"  # one decimal (the --format ratio unit changes the decimals)
RATIO = "ratio"      # one decimal
DECIMAL = "decimal"  # a measured value, one decimal
TEXT = "text"        # quoted; string ids are resolved through the report's string pool
# Comparison cells (conventions 10): an (n, 2) array of base and target values, each side
# formatted with the inner kind and joined as "base / target"; a missing side prints "-".
PAIR_INT = "pair_int"
PAIR_PERCENT = "pair_percent"
PAIR_TEXT = "pair_text"  # text values (str or None), never string ids: the sides have different pools
PAIR_INNER = {PAIR_INT: INT, PAIR_PERCENT: PERCENT, PAIR_TEXT: TEXT}
COLUMN_KINDS = (INT, PERCENT, RATIO, DECIMAL, TEXT) + tuple(PAIR_INNER)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    help: str

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind}")


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


Frame = dict  # column name -> numpy array (or per-row text as an Arrow string array; engine.Gathered), in order
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
        from asysstats.rules.summary import Summary  # it imports this module

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


class Registry:
    """Rules by name, in the order an index of modules lists them; a module is imported when
    one of its rules is first asked for."""

    def __init__(self, package: str, modules: Mapping[str, Sequence[str]]) -> None:
        self._package = package
        self._modules = modules
        self._module_of: dict[str, str] = {}
        for module, names in modules.items():
            for name in names:
                if name in self._module_of:
                    raise ValueError(f"duplicate rule name {name}")
                self._module_of[name] = module
        self._rules: dict[str, Rule] = {}

    def __iter__(self) -> Iterator[Rule]:
        return (self._rule(name) for name in self._module_of)

    def __contains__(self, name: str) -> bool:
        return name in self._module_of

    def _rule(self, name: str) -> Rule:
        if name not in self._rules:
            module = self._module_of[name]
            rules = import_module(f"{self._package}.{module}").RULES
            if tuple(r.name for r in rules) != tuple(self._modules[module]):
                raise ValueError(f"module {module} declares {[r.name for r in rules]}, "
                                 f"the index lists {list(self._modules[module])}")
            self._rules.update((r.name, r) for r in rules)
        return self._rules[name]

    def get(self, name: str, command: str = "stats") -> Rule:
        rule = self._rule(name) if name in self else None
        if rule is None or (command == "analyze") != (rule.command == "analyze"):
            pool = [r.name for r in self if (r.command == "analyze") == (command == "analyze")]
            import difflib  # for the error only

            near = difflib.get_close_matches(name, pool, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else f" (see 'asys {command} --help-reports')"
            raise AsysError(f"unknown rule '{name}'{hint}")
        return rule
