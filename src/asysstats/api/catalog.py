"""The rules' declarations as plain records (:func:`rules`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asysstats.analysis.declarations import Option, Rule
from asysstats.rulebook import REGISTRY


@dataclass(frozen=True)
class OptionInfo:
    """A rule option: ``name`` on the command line, ``keyword`` in Python (``hgtx-name`` /
    ``hgtx_name``), its kind (flag, int, int_list, choice, regex, regex_list, str_list, text),
    default, choices and bounds (None: int64's)."""

    name: str
    keyword: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...]
    minimum: int | None
    maximum: int | None

    @classmethod
    def of(cls, option: Option) -> "OptionInfo":
        return cls(option.name, option.attribute, option.kind, option.default, option.help, option.choices,
                   option.minimum, option.maximum)


@dataclass(frozen=True)
class ColumnInfo:
    """An output column: its header, kind (int, percent, ratio, decimal, text, pair_*) and help."""

    name: str
    kind: str
    help: str


@dataclass(frozen=True)
class RuleInfo:
    """What a rule is: name, title, the command that runs it (stats or analyze), how many
    reports it reads (2 for a comparison), its options, output columns, the tables and columns
    it reads, and its help."""

    name: str
    title: str
    command: str
    reports: int
    options: tuple[OptionInfo, ...]
    columns: tuple[ColumnInfo, ...]
    reads: dict[str, tuple[str, ...]]
    help: str

    @classmethod
    def of(cls, rule: Rule[Any]) -> "RuleInfo":
        return cls(rule.name, rule.title, rule.command, rule.reports, tuple(map(OptionInfo.of, rule.all_options)),
                   tuple(ColumnInfo(c.name, c.kind, c.help) for c in rule.columns), dict(rule.reads), rule.help)

    def option(self, name: str) -> OptionInfo:
        """The option called ``name`` (or with that Python keyword)."""
        found = [o for o in self.options if name in (o.name, o.keyword)]
        if not found:
            raise KeyError(f"rule {self.name} has no option {name!r}")
        return found[0]


def rules(command: str | None = None) -> list[RuleInfo]:
    """Every rule's declaration, in the order ``--help-reports`` lists them (of ``asys stats``
    or ``asys analyze`` only, with ``command``)."""
    return [RuleInfo.of(rule) for rule in REGISTRY if command is None or rule.command == command]
