"""Where the per-report work runs: the CLI process itself, or a Dask cluster.

An executor assigns each report an *owner* (a worker that can read the file; on a
cluster, one on the node that holds it) and runs calls there, all reports at once.
``run`` returns, per call, its value or the exception it raised, so that the caller
decides which failures stop the run.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Sequence

from asysstats.errors import AsysError
from asysstats.many import worker

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
        futures = [self.client.submit(fn, *args, workers=[owner], allow_other_workers=False, pure=False)
                   for owner, fn, args in calls]
        out = []
        for future in futures:
            try:
                out.append(future.result())
            except Exception as exc:
                out.append(exc)
        return out

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()
