"""The machinery shared by the comparison rules (``*_compare``, two reports).

A comparison computes a single-report table on the base and on the target report (the
single rule's own compute: no statistic is computed twice), matches the rows of the two
tables by key (a full outer join), and lays them out as ``base / target`` cells
(docs/decisions.md D5) with ``target / base`` ratios (docs/decisions.md D4). A side without a matching
row is missing and prints ``-``; so is a ratio whose base is 0. ``top=N`` keeps the rows in
the first N of either report; ``matched-only`` hides rows with a missing side. Rows are
sorted by the larger of the two sides' sort values, descending (the reference's hotspot
order: an unmatched row sorts by the side that exists), ties by name ascending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from asysstats.analysis.activity import device_names
from asysstats.analysis.declarations import Option, Options, Reads, Rule, merged_reads
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.parsers import without_run_ids
from asysstats.analysis.reads import DEVICE_READS
from asysstats.core.result import PAIR_INNER, RATIO, TEXT, Column, Frame
from asysstats.core.tables import NA
from asysstats.writing.format import texts

TOP = Option("top", "int", "Compare only the rows in the top N of either report (default: all).", None, minimum=1)
MATCHED_ONLY = Option("matched-only", "flag", "Hide the rows that have no match in one of the reports.", False)
O = TypeVar("O", bound=Options)


@dataclass(frozen=True)
class Selection(Options):
    """The options that select the rows of a comparison (``top``, ``matched-only``)."""

    top: int | None = TOP.field()
    matched_only: bool = MATCHED_ONLY.field()


DEVICE_NAME = "Device Name"  # the column every side frame gets: its report's (or row's) device name
PAIR, RATIO_OF, BASE, TARGET, EITHER = "pair", "ratio", "base", "target", "either"


@dataclass(frozen=True)
class Cell:
    """An output column made from column ``source`` of the side frames: both sides (``pair``),
    their ``target / base`` ratio, one side (``base`` / ``target``), or the side that exists
    (``either``, for a matched key such as the operator type)."""

    column: Column
    source: str
    part: str


def pair(name: str, source: str, kind: str, help: str) -> Cell:
    assert kind in PAIR_INNER
    return Cell(Column(name, kind, f"{help} (base / target)"), source, PAIR)


def ratio(name: str, source: str, help: str) -> Cell:
    return Cell(Column(name, RATIO, f"{help}: target / base ('-' when unmatched or the base is 0)"), source, RATIO_OF)


def side(name: str, source: str, which: str, help: str, kind: str = TEXT) -> Cell:
    return Cell(Column(name, kind, help), source, which)


SideFrame = Callable[[Inputs, Any], Frame]


def single_rule_frame(rule: Rule[Any], extra_text: tuple[str, ...] = (), run_free: tuple[str, ...] = ()) -> SideFrame:
    """A side frame from ``rule``'s compute with the comparison's options (the rule's defaults
    for those it does not give): its columns and the undeclared text columns ``extra_text``,
    text resolved to strings, the names of the ``run_free`` columns without their per-run
    autograd ids (:func:`without_run_ids`: what they match on and show; kept with
    ``no-merge-pytorch-parameter``), plus the report's device name."""

    def frame(inputs: Inputs, options: Options) -> Frame:
        values = options.like(rule.options)
        computed = rule.compute(inputs, values)
        text = {c.name for c in rule.columns if c.kind == TEXT} | set(extra_text)
        out = {name: resolved(inputs, computed[name]) if name in text else np.asarray(computed[name])
               for name in [c.name for c in rule.columns] + list(extra_text)}
        for name in run_free if not keeps_run_ids(values) else ():
            out[name] = run_free_names(out[name])
        rows = len(next(iter(out.values()))) if out else 0
        out[DEVICE_NAME] = np.full(rows, device_label(inputs, values.device), dtype=object)
        return out

    return frame


def keeps_run_ids(options: Options) -> bool:
    """Whether the user keeps PyTorch operators apart by their per-run ids
    (``no-merge-pytorch-parameter``): then they show them (and match without them)."""
    return bool(getattr(options, "no_merge_pytorch_parameter", False))


def run_free_names(names: np.ndarray) -> np.ndarray:
    """Operator names (text) without their per-run autograd ids (``seq``, ``op_id``,
    ``input_op_ids``), one rewrite per distinct name: what two runs of a model share."""
    done = {name: without_run_ids(name) for name in dict.fromkeys(names.tolist())}
    return np.array([done[name] for name in names.tolist()], dtype=object)


def resolved(inputs: Inputs, values: np.ndarray) -> np.ndarray:
    """Text values (``None`` when missing) of a column of string ids or strings."""
    return texts(np.asarray(values), inputs.strings)


def device_label(inputs: Inputs, devices: Sequence[int] | None) -> str | None:
    """The distinct names of the report's (selected) devices in id order, joined by ','."""
    names = device_names(inputs)
    chosen = [names[d] for d in sorted(names) if devices is None or d in devices]
    return ",".join(dict.fromkeys(chosen)) or None


@dataclass(frozen=True)
class Pairing:
    """The base and target row of every output row; -1 on an unmatched side."""

    base: np.ndarray
    target: np.ndarray

    def take(self, mask_or_order: np.ndarray) -> "Pairing":
        return Pairing(self.base[mask_or_order], self.target[mask_or_order])


def match_rows(base_keys: Sequence[np.ndarray], target_keys: Sequence[np.ndarray]) -> Pairing:
    """Full outer join of the rows on equal keys; the k-th row with a repeated key pairs with
    the k-th row of that key on the other side. Base rows first, then the unmatched target rows.
    (A loop over the rows of summary tables, one per group.)"""
    def occurrences(keys: Sequence[np.ndarray]) -> list[tuple]:
        seen: dict[tuple, int] = {}
        out = []
        for key in zip(*(k.tolist() for k in keys)):
            seen[key] = seen.get(key, -1) + 1
            out.append((key, seen[key]))
        return out

    target_rows = {key: row for row, key in enumerate(occurrences(target_keys))}
    base = occurrences(base_keys)
    found = np.array([target_rows.pop(key, -1) for key in base], dtype=np.int64)
    rest = np.array(sorted(target_rows.values()), dtype=np.int64)
    return Pairing(np.concatenate([np.arange(len(base), dtype=np.int64), np.full(len(rest), -1, np.int64)]),
                   np.concatenate([found, rest]))


def taken(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` with a missing cell (``None``, NaN or ``NA``) where ``rows`` is -1."""
    values = np.asarray(values)
    fill = None if values.dtype == object else np.nan if values.dtype.kind == "f" else NA
    out = np.full(len(rows), fill, dtype=values.dtype)
    hit = rows >= 0
    out[hit] = values[rows[hit]]
    return out


def as_float(values: np.ndarray) -> np.ndarray:
    """Numbers as floats, missing cells NaN."""
    values = np.asarray(values)
    if values.dtype.kind in "iu":
        return np.where(values == NA, np.nan, values.astype(np.float64))
    return values.astype(np.float64)


def side_values(frames: tuple[Frame, Frame], pairing: Pairing, source: str) -> tuple[np.ndarray, np.ndarray]:
    base, target = (taken(f[source], rows) for f, rows in zip(frames, (pairing.base, pairing.target)))
    if base.dtype != target.dtype and object not in (base.dtype, target.dtype):
        base, target = as_float(base), as_float(target)
    return base, target


def cell_values(cell: Cell, frames: tuple[Frame, Frame], pairing: Pairing) -> np.ndarray:
    base, target = side_values(frames, pairing, cell.source)
    if cell.part == PAIR:
        return np.stack([base, target], axis=1) if len(base) else np.empty((0, 2), dtype=base.dtype)
    if cell.part == RATIO_OF:
        return target_over_base(base, target)
    if cell.part == EITHER:
        return np.where(pairing.base >= 0, base, target)
    return base if cell.part == BASE else target


def target_over_base(base: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``target / base``; NaN where a side is missing or the base is 0."""
    b, t = as_float(base), as_float(target)
    ok = np.isfinite(b) & np.isfinite(t) & (b != 0)
    return np.where(ok, t / np.where(ok, b, 1.0), np.nan)


def selected(pairing: Pairing, options: Options) -> Pairing:
    """Rows in the top N of either report (the side tables are in their rule's order), and
    only matched rows with ``matched-only``."""
    keep = np.ones(len(pairing.base), dtype=bool)
    selection = options.like(Selection)
    top = selection.top
    if top is not None:
        keep &= ((pairing.base >= 0) & (pairing.base < top)) | ((pairing.target >= 0) & (pairing.target < top))
    if selection.matched_only:
        keep &= (pairing.base >= 0) & (pairing.target >= 0)
    return pairing.take(keep)


def name_rank(values: np.ndarray) -> np.ndarray:
    """Ranks ordering names ascending: text (missing first) or numbers."""
    if values.dtype != object:
        return np.nan_to_num(as_float(values), nan=-np.inf)
    keys = [(v is not None, v or "") for v in values.tolist()]
    position = {key: rank for rank, key in enumerate(sorted(set(keys)))}
    return np.array([position[key] for key in keys], dtype=np.int64)


def ordered(pairing: Pairing, frames: tuple[Frame, Frame], sort: str | None, names: tuple[str, ...],
            first: str | None) -> Pairing:
    """Rows whose first name is ``first``, then descending by the larger side's ``sort`` value
    (none: by name only), then by the ``names`` columns ascending."""
    shown = [cell_values(Cell(Column(n, TEXT, n), n, EITHER), frames, pairing) for n in names]
    larger = np.zeros(len(pairing.base))
    if sort is not None:
        base, target = (as_float(v) for v in side_values(frames, pairing, sort))
        larger = np.nan_to_num(np.fmax(base, target), nan=-np.inf)
    pinned = np.array([first is not None and n == first for n in shown[0].tolist()], dtype=bool)
    ranks = [name_rank(values) for values in reversed(shown)]
    order = np.lexsort((pairing.target, pairing.base, *ranks, -larger, ~pinned))
    return pairing.take(order)


Order = Callable[[Any], tuple["str | None", tuple[str, ...]]]
Match = Callable[[tuple[Frame, Frame], Any, tuple[Inputs, Inputs]], Pairing]  # frames, options, sides -> rows


def comparison_rule(name: str, title: str, help: str, cells: tuple[Cell, ...], side_frame: SideFrame,
                    keys: tuple[str, ...], sort: str, options: type[O], reads: Reads,
                    requires: tuple[str, ...] = (), first: str | None = None, order: Order | None = None,
                    match: Match | None = None, share: str | None = None, label: str | None = None) -> Rule[O]:
    """A two-report rule comparing the tables ``side_frame`` computes, matched on ``keys`` (or
    as ``match`` pairs them), sorted by ``sort`` then ``keys[0]`` (or by what ``order`` says for
    the options given); ``options`` declares ``matched-only`` last. It reads what ``side_frame``
    reads (``reads``) and the device names its ``Device Name`` cells show; ``share``: the pair
    column whose largest changes an XLSX workbook charts, for the rows ``label`` names."""
    if options.declarations()[-2] is not MATCHED_ONLY:
        raise ValueError(f"rule {name}: a comparison's last option is matched-only")

    def compute(sides: tuple[Inputs, Inputs], values: O) -> Frame:
        frames = (side_frame(sides[0], values), side_frame(sides[1], values))
        matched = match(frames, values, sides) if match is not None else match_rows(*([f[k] for k in keys]
                                                                                      for f in frames))
        pairing = selected(matched, values)
        by, names = order(values) if order is not None else (sort, keys[:1])
        pairing = ordered(pairing, frames, by, names, first)
        return {c.column.name: cell_values(c, frames, pairing) for c in cells}

    return Rule(name=name, title=title, help=help + " Cells are 'base / target'; ratios are target / base.",
                columns=tuple(c.column for c in cells), compute=compute, reads=merged_reads(reads, DEVICE_READS),
                requires=requires, options=options, reports=2, share=share, label=label)

