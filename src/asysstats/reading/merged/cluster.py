"""Where the per-report work runs: the CLI process itself, or a Dask cluster.

An executor assigns each report an *owner* (a worker that can read the file; on a
cluster, one on the node that holds it) and runs calls there, all reports at once.
``run`` returns, per call, its value or the exception it raised, so that the caller
decides which failures stop the run. ``shuffle`` runs calls that each split their result
into one bucket per reducer and reduces bucket ``i`` of every call on reducer ``i``: the
buckets go from worker to worker, only the heads and the reductions come back.
"""

from __future__ import annotations

import logging
import operator
import os
from typing import Any, Callable, Sequence

from asysstats.core.errors import AsysError
from asysstats.reading.merged import worker
from asysstats.reading.merged.shuffle import bucket, reduce_in_order, split_batch

INSTALL_HINT = 'pip install "asysstats[dask]" (or: pip install "dask[distributed]")'
Call = tuple[str, Callable[..., Any], tuple]  # (owner, function, arguments)
class InlineExecutor:
    """Runs every call in this process, one after the other (one report, no cluster)."""

    name = "this process"

    def owners(self, paths: Sequence[str]) -> list[str | None]:
        return ["local" if seen else None for seen in worker.visible(paths)]

    def run(self, calls: Sequence[Call]) -> list[Any]:
        out = []
        for _, fn, args in calls:
            try:
                out.append(fn(*args))
            except Exception as exc:  # handed back: the caller names the report
                out.append(exc)
        return out

    def reducers(self) -> list[str]:
        return ["local"]

    def share(self, value: Any) -> Any:
        """``value`` as an argument of many calls (here: itself)."""
        return value

    def shuffle(self, calls: Sequence[Call], reduce: Callable[..., Any], reducers: Sequence[str]) -> tuple[list, list]:
        """The heads of ``calls`` and, per reducer, ``reduce`` over its bucket of every call."""
        heads, pieces = split_batch([call[1:] for call in calls], len(reducers))
        order = range(len(calls))
        return heads, self.run([(r, reduce_in_order, (reduce, order, pieces[i])) for i, r in enumerate(reducers)])

    def close(self) -> None:
        pass


class DaskExecutor:
    """Runs calls on Dask workers; each report's calls always go to its owner."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None, processes: bool = True) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise AsysError(f"--merge-reports runs on Dask, which is not installed: {INSTALL_HINT}") from None
        self._cluster = None
        try:
            if scheduler:
                self.client = Client(scheduler, timeout="10s")
                self.name = scheduler
            else:
                self._cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                             processes=processes, dashboard_address="127.0.0.1:0",
                                             silence_logs=logging.ERROR)
                self.client = Client(self._cluster)
                self.name = f"a local cluster of {len(self._cluster.workers)} workers"
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            where = f"--scheduler {scheduler}: cannot connect" if scheduler else "cannot start a local Dask cluster"
            raise AsysError(f"{where} ({exc})") from None

    def owners(self, paths: Sequence[str]) -> list[str | None]:
        """Per report, the least loaded worker that can read it (None: no worker can)."""
        seen = self.client.run(worker.visible, list(paths))
        if not seen:
            raise AsysError(f"{self.name}: no Dask worker is running")
        load = dict.fromkeys(sorted(seen), 0)
        chosen: list[str | None] = []
        for i in range(len(paths)):
            able = [w for w in load if seen[w][i]]
            best = min(able, key=lambda w: load[w]) if able else None
            if best is not None:
                load[best] += 1
            chosen.append(best)
        return chosen

    def run(self, calls: Sequence[Call]) -> list[Any]:
        return results([self._on(owner, fn, *args) for owner, fn, args in calls])

    def reducers(self) -> list[str]:
        return sorted(self.client.scheduler_info()["workers"])

    def share(self, value: Any) -> Any:
        """``value`` sent once to every worker, as an argument of many calls."""
        return self.client.scatter(value, broadcast=True, hash=False)

    def shuffle(self, calls: Sequence[Call], reduce: Callable[..., Any], reducers: Sequence[str]) -> tuple[list, list]:
        """The heads of ``calls`` and, per reducer, ``reduce`` over its bucket of every call.
        Each owner runs its calls as one batch (a few tasks per worker, not per report);
        buckets move between workers, never through this process."""
        batches: dict[str, list[int]] = {}
        for i, (owner, _, _) in enumerate(calls):
            batches.setdefault(owner, []).append(i)
        splits = {owner: self._on(owner, split_batch, [calls[i][1:] for i in rows], len(reducers))
                  for owner, rows in batches.items()}
        order = [i for rows in batches.values() for i in rows]
        reduced = [self._on(r, reduce_in_order, reduce, order, *(self._on(o, bucket, s, i) for o, s in splits.items()))
                   for i, r in enumerate(reducers)]
        heads = results([self._on(owner, operator.itemgetter(0), split) for owner, split in splits.items()])
        by_call = {i: head for batch, rows in zip(heads, batches.values())
                   for i, head in zip(rows, batch if isinstance(batch, list) else [batch] * len(rows))}
        return [by_call[i] for i in range(len(calls))], results(reduced)

    def _on(self, worker_address: str, fn: Callable[..., Any], *args: Any):
        return self.client.submit(fn, *args, workers=[worker_address], allow_other_workers=False, pure=False)

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()


def results(futures: Sequence[Any]) -> list[Any]:
    """Each future's value, or the exception it raised."""
    out = []
    for future in futures:
        try:
            out.append(future.result())
        except Exception as exc:
            out.append(exc)
    return out
