"""The reduced path where a report lives: a summary rule's rows on the owner's report,
reduced to per-group partials and split into buckets for the median shuffle.

These functions run on the worker that owns a report (:mod:`asysstats.reading.merged.worker`
keeps it open). The rule sees a :class:`PartReport`: the report with ids placed job-wide
and the merged set's metadata, under the merged set's settings and ranges (:class:`Job`),
so its rows are the rows the rule would take from the merged set. Group keys travel with
text as strings (dictionary-encoded) and are re-interned where they arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np

from asysstats.analysis.declarations import Options
from asysstats.analysis.inputs import Inputs, Scope, Settings
from asysstats.compute.partials import Stats, group_hash, medians, partials, split_buckets, string_hash
from asysstats.core.strings import StringPool
from asysstats.reading.merged.cluster import InlineExecutor
from asysstats.reading.merged.report import Member, MergedReport, interned
from asysstats.reading.merged.worker import VIEWS, Part, Text, encode_text, take_text
from asysstats.rulebook import REGISTRY

Key = Union[np.ndarray, Text]  # a key column: integers, or text as (codes, distinct strings)
# a bucket's groups (their keys and numbers in the head), each row's group among them, the values
Piece = tuple[list[Key], np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Job:
    """What the reduction of every report shares with the merged set."""

    token: str  # names the merged set: each worker keeps its part reports for the whole run
    path: Path  # the merged set's name (data-quality notes name it)
    cache: bool
    folded: dict[str, list[Part]]  # metadata tables of every report (analysis range, enumerations, ...)
    hgtx_end: int | None  # the merged set's last HGTX timestamp (where ranges without an end stop)
    settings: Settings
    scope: Scope
    buckets: int


@dataclass(frozen=True)
class Head:
    """What a report's reduction returns to the driver: per-group keys and partials, notes."""

    keys: list[Key]
    partials: Stats
    notes: list[str]


class PartReport(MergedReport):
    """One report of a merged set as its rules see it on its owner (see the module doc)."""

    def __init__(self, member: Member, job: Job) -> None:
        super().__init__([member], InlineExecutor(), job.cache, job.path, [])
        self.folded = job.folded
        self.hgtx_end = job.hgtx_end  # where ranges without an end stop (asysstats.analysis.hgtx)

    def has(self, logical: str) -> bool:
        return logical in self.folded or super().has(logical)

    def parts(self, logical: str, columns: tuple[str, ...]) -> list[Part]:
        if logical in self.folded:
            return [{c: part[c] for c in columns} for part in self.folded[logical]]
        return super().parts(logical, columns)


def summary_part(member: Member, job: Job, rule: str, options: Options) -> tuple[Head, list[Piece]]:
    """The rule's rows on the member's report: partials per group, and one piece per bucket."""
    key = (job.token, str(member.path))
    if key not in VIEWS:
        VIEWS[key] = PartReport(member, job)
    report = VIEWS[key]
    report.hgtx_end = job.hgtx_end  # known once a rule reads HGTX ranges, before they are built
    declared = REGISTRY.get(rule)
    summary = declared.summary
    assert summary is not None, f"rule {rule} is not a summary: it is not reduced"
    inputs = Inputs(report, job.settings, job.scope, declared.reads, declared.name)
    rows = summary.rows(inputs, options)
    keys, partial, group = partials(rows.keys, rows.values)

    travelling = [encode_text(report.strings, k) if i in rows.text else k for i, k in enumerate(keys)]
    bucket = (group_hash([text_hash(k) if isinstance(k, tuple) else k for k in travelling])
              % np.uint64(job.buckets)).astype(np.int64)
    pieces = [([take_text(k, mine) if isinstance(k, tuple) else k[mine] for k in travelling], mine, local, values)
              for mine, local, values in split_buckets(group, bucket, rows.values, job.buckets)]
    return Head(travelling, partial, inputs.notes), pieces


def text_hash(text: Text) -> np.ndarray:
    """Per row, the hash of its string (0 when missing)."""
    codes, values = text
    hashes = string_hash(values)
    return np.where(codes >= 0, hashes[np.maximum(codes, 0)], 0).astype(np.uint64) if len(hashes) \
        else np.zeros(len(codes), np.uint64)


def bucket_medians(*pieces: Piece) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A reducer's bucket of every report (in report order): the exact median of each of its
    groups, named by a report that has the group and the group's number in that report's head."""
    pool = StringPool()
    keys_of_each = [[interned(pool, k) for k in p[0]] for p in pieces]
    keys = [np.concatenate([each[i] for each in keys_of_each]) for i in range(len(keys_of_each[0]))]
    sizes = [len(p[1]) for p in pieces]
    offsets = np.cumsum([0] + sizes[:-1])
    group = np.concatenate([p[2] + offset for p, offset in zip(pieces, offsets)])
    first, median = medians(keys, group, np.concatenate([p[3] for p in pieces]))
    report = np.repeat(np.arange(len(pieces)), sizes)[first]
    return report, np.concatenate([p[1] for p in pieces])[first], median
