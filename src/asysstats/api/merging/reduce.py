"""``--merge-reports`` for summary rules: statistics reduced where each report lives.

Every owner runs the rule's ``rows`` on its report (:func:`asysstats.api.merging.parts.summary_part`)
and keeps them: it returns per-group partials (count, sum, min, max, mean, M2) and sends the
rows of bucket ``i`` (by a hash of the group key) to reducer ``i``, which returns the exact
median of each of its groups. Here the partials merge by key
(:func:`asysstats.compute.partials.merge`), the medians join them, and the rule's ``frame``
makes the table — the same ``frame`` as over one report.
"""

from __future__ import annotations

import re
import uuid
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from asysstats.analysis.declarations import Options, Rule
from asysstats.analysis.inputs import Inputs, Scope
from asysstats.analysis.reads import HGTX_COLUMNS
from asysstats.api.merging import parts
from asysstats.compute.partials import PARTIAL_FIELDS, merge
from asysstats.core.result import Result
from asysstats.reading.merged import worker
from asysstats.reading.merged.report import ENUM_TABLES, MergedReport, interned, raise_failures
from asysstats.reading.schema import TABLES

FOLDED = ("analysis", "session_start") + ENUM_TABLES
NOTE = re.compile(r"^(.*?): (\d+) (.*)$")  # "<report>: <count> <what>" (asysstats.rulebook.quality)


@dataclass
class Shared:
    """What the reductions of a merged set share over the run: a token naming the set, the
    metadata tables of every report (placed), the set's last HGTX timestamp (once read)."""

    token: str
    folded: dict[str, list[worker.Part]]
    hgtx_end: int | None = None
    hgtx_read: bool = False


_SHARED: "weakref.WeakKeyDictionary[MergedReport, Shared]" = weakref.WeakKeyDictionary()


def run_reduced(rule: Rule[Any], options: Options, inputs: Inputs) -> Result:
    """The summary ``rule`` over the merged report of ``inputs``, reduced on the workers."""
    inputs.require(*rule.required_tables)
    inputs = inputs.for_rule(rule.name, rule.reads)
    merged: MergedReport = inputs.report  # type: ignore[assignment]
    reducers = merged.executor.reducers()
    # a rule with the hgtx-name option reads HGTX ranges for it only
    common = shared(merged, "hgtx" in rule.reads and getattr(options, "hgtx_name", True))
    job = parts.Job(common.token, merged.path, merged.cache_columns, common.folded, common.hgtx_end,
                    inputs.settings, scope(inputs), len(reducers))
    sent = merged.executor.share(job)
    calls = [(m.owner, parts.summary_part, (m, sent, rule.name, options)) for m in merged.members]
    heads, reduced = merged.executor.shuffle(calls, parts.bucket_medians, reducers)
    heads = raise_failures(merged.members, heads)
    for failure in (r for r in reduced if isinstance(r, Exception)):
        raise failure
    merged.returned += returned_bytes(heads, reduced)
    columns = range(len(heads[0].keys))
    keys, stats, group = merge([np.concatenate([interned(merged.strings, h.keys[i]) for h in heads]) for i in columns],
                               {f: np.concatenate([h.partials[f] for h in heads]) for f in PARTIAL_FIELDS})
    stats["median"] = joined_medians(heads, group, reduced)
    inputs.notes.extend(n for n in summed_notes([n for h in heads for n in h.notes]) if n not in inputs.notes)
    summary = rule.summary
    assert summary is not None, f"rule {rule.name} is not a summary: it is not reduced"
    return rule.shaped(options, summary.frame(inputs, options, keys, stats), inputs.strings, inputs.notes)


def shared(merged: MergedReport, reads_hgtx: bool) -> Shared:
    """The set's :class:`Shared` (the folded metadata is read once per set, each part folds
    it like the merged set; the last HGTX timestamp once a rule reads HGTX ranges)."""
    if merged not in _SHARED:
        _SHARED[merged] = Shared(uuid.uuid4().hex, {t: merged.parts(t, tuple(c.name for c in TABLES[t].columns))
                                                    for t in FOLDED if merged.has(t)})
    common = _SHARED[merged]
    if reads_hgtx and merged.has("hgtx") and not common.hgtx_read:
        calls = [(m.owner, worker.latest, (str(m.path), merged.cache_columns, "hgtx", HGTX_COLUMNS, m.at))
                 for m in merged.members]
        latest = [t for t in raise_failures(merged.members, merged.executor.run(calls)) if t is not None]
        common.hgtx_end, common.hgtx_read = max(latest, default=None), True
    return common


def scope(inputs: Inputs) -> Scope:
    """The merged set's analysis range (when something reads it) and time windows."""
    needed = inputs.has("analysis") or inputs.settings.filter_time is not None
    return Scope(inputs.capture_range() if needed else None, inputs.window, inputs.ppu_window)


def joined_medians(heads: list[parts.Head], group: np.ndarray, reduced: list) -> np.ndarray:
    """The reducers' medians per merged group (``group``: the group of each head's rows, stacked)."""
    offsets = np.cumsum([0] + [len(h.partials["count"]) for h in heads[:-1]])
    median = np.full(int(group.max(initial=-1)) + 1, np.nan)
    for report, head_group, values in reduced:
        median[group[offsets[report] + head_group]] = values
    if np.isnan(median).any():
        raise AssertionError("the reducers returned no median for some groups")
    return median


def summed_notes(notes: list[str]) -> list[str]:
    """Notes of the reports that differ only in their count, as one note with the total."""
    totals: dict[tuple[str, str], int] = {}
    for note in notes:
        found = NOTE.match(note)
        head, count, rest = found.groups() if found else (note, "0", "")
        totals[(head, rest)] = totals.get((head, rest), 0) + int(count)
    return [f"{head}: {count} {rest}" if rest else head for (head, rest), count in totals.items()]


def returned_bytes(heads: list[parts.Head], reduced: list) -> int:
    """Bytes of the arrays (and characters of the strings) that came back to this process."""
    def size(key: Any) -> int:
        return key[0].nbytes + sum(len(s or "") for s in key[1]) if isinstance(key, tuple) else key.nbytes

    return sum(size(k) for h in heads for k in h.keys) + sum(v.nbytes for h in heads for v in h.partials.values()) \
        + sum(v.nbytes for r in reduced for v in r)
