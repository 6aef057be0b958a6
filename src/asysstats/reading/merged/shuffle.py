"""The pieces of a shuffle: calls run in batches (one per worker), each call's result split
into a head and one piece per reducer; a reducer reduces the pieces in call order."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from asysstats.core.errors import AsysError

Split = tuple[list[Any], list[list[Any]]]  # a batch of calls: their heads; per reducer, their pieces


def split_batch(calls: Sequence[tuple[Callable[..., Any], tuple]], reducers: int) -> Split:
    """Run calls that each return (head, one piece per reducer): their heads (or the
    exception raised) and, per reducer, the calls' pieces (None for a failed call)."""
    heads: list[Any] = []
    pieces: list[list[Any]] = [[] for _ in range(reducers)]
    for fn, args in calls:
        try:
            head, parts = fn(*args)
        except Exception as exc:  # handed back: the caller names the report
            head, parts = exc, [None] * reducers
        heads.append(head)
        for mine, piece in zip(pieces, parts):
            mine.append(piece)
    return heads, pieces


def bucket(split: Split, i: int) -> list[Any]:
    return split[1][i]


def reduce_in_order(reduce: Callable[..., Any], order: Sequence[int], *batches: list[Any]) -> Any:
    """``reduce`` over the pieces of the batches in call order (``order``: the call of each piece)."""
    pieces = dict(zip(order, (piece for batch in batches for piece in batch)))
    if any(piece is None for piece in pieces.values()):
        raise AsysError("a report failed before its pieces were reduced")
    return reduce(*(pieces[i] for i in range(len(order))))
