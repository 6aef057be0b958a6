"""Issue 31's target 4: every summary rule and ``hgtx_kern_sum`` on a report of 50 M kernels, each
within a memory limit.

    python bench/scale.py [--scale N] [--times K] [--limit-gib 12] [--rules a,b]

The report is ``asys sample --scale N`` (default 1434: 5 M kernels, 5.6 M API calls, 5.7 M HGTX
events) replicated K times over (default 10; ``common.replicated``: each copy later in time, with
its own correlation and range ids). Each rule runs once as a whole ``asys`` process from an empty
column cache (a cold run: the larger peak), inside a memory cgroup of ``--limit-gib`` (default 12)
where the machine has one (cgroup v1 or v2, as root), so that a rule that needs more is stopped by
the kernel there and then, not the machine; without one the peak RSS alone tells. Prints, and
writes to bench/out/scale_<report>.md, each rule's seconds, peak RSS and its anonymous part (the RSS
also counts the cache files a run maps, pages the kernel drops and reads again within the limit),
RSS per million kernels and whether it finished within the limit: inside a cgroup, whether it ran
to its end there (its RSS may pass the limit by pages charged to another group, such as the shared
libraries this script loaded first); without one, whether its peak RSS stayed below the limit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import replicated
from run import OUT, into_page_cache, sample

from asysstats.analysis.declarations import ASYS
from asysstats.rulebook import REGISTRY

CGROUP_ROOTS = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


def memory_group(limit: int) -> Path | None:
    """A memory cgroup of ``limit`` bytes (v1 ``memory.limit_in_bytes`` or v2 ``memory.max``), or
    None when the machine offers none to this user."""
    for root in CGROUP_ROOTS:
        for control in ("memory.limit_in_bytes", "memory.max"):
            if (root / control).exists() or (root / "cgroup.controllers").exists():
                group = root / f"asysstats-bench-{os.getpid()}"
                try:
                    group.mkdir(exist_ok=True)
                    (group / control).write_text(str(limit))
                    return group
                except OSError:
                    shutil.rmtree(group, ignore_errors=True)
    return None


def run_limited(args: list[str], env: dict[str, str], group: Path | None) -> tuple[float, int, int, int]:
    """Wall seconds, peak RSS, peak anonymous RSS (bytes) and exit status of ``args`` run inside
    ``group``. The RSS counts the pages of the cache files the run maps, which the kernel drops
    and reads again within the limit; the anonymous part is what a limit stops a run for (polled
    every 20 ms from /proc, where there is one)."""
    enter = ["sh", "-c", f'echo $$ > "{group}/cgroup.procs" && exec "$@"', "sh"] if group else []
    begin = time.perf_counter()
    process = subprocess.Popen(enter + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    anonymous = 0
    status_file = Path(f"/proc/{process.pid}/status")
    while True:
        ended, status, usage = os.wait4(process.pid, os.WNOHANG)
        if ended:
            break
        try:
            fields = status_file.read_text().split("RssAnon:")
            anonymous = max(anonymous, int(fields[1].split()[0]) * 1024) if len(fields) > 1 else anonymous
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    seconds = time.perf_counter() - begin
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = process.stderr.read().decode(errors="replace").strip()[-300:] if process.stderr else ""
        print(f"  exit {code} {err}", file=sys.stderr)
    return seconds, usage.ru_maxrss * 1024, anonymous, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1434)
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--limit-gib", type=float, default=12, help="memory of each run, GiB")
    parser.add_argument("--rules", default="")
    args = parser.parse_args()
    limit = int(args.limit_gib * 2**30)
    report = replicated(sample(args.scale), args.times)
    con = sqlite3.connect(f"file:{report}?mode=ro", uri=True)
    kernels = con.execute("SELECT count(*) FROM HGPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    summaries = [r for r in REGISTRY if r.reports == 1 and r.mirrors == ASYS and r.command == "stats"
                 and (r.name.endswith("_sum") or r.name.endswith("_summary"))]
    rules = [REGISTRY.get(name) for name in args.rules.split(",")] if args.rules else summaries  # in the order given
    group = memory_group(limit)
    where = f"each run in a memory cgroup of {limit / 2**30:.1f} GiB" if group else "no memory cgroup"
    lines = [f"report: {report.name} ({report.stat().st_size / 1e9:.1f} GB, {kernels:,} kernels), machine: "
             f"{os.cpu_count()} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB; "
             f"{where}", "",
             "| rule | cold (s) | peak RSS (MB) | of it anonymous (MB) | MB per million kernels | within the limit |",
             "|---" * 6 + "|"]
    into_page_cache(report)
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        with tempfile.TemporaryDirectory(dir=OUT) as temp:
            for rule in rules:
                cache = Path(temp) / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                command = [sys.executable, "-m", "asysstats", rule.command, "-r", rule.name, "--format", "csv",
                           "-o", str(Path(temp) / "r"), "-f", "true", str(report)]
                seconds, rss, anonymous, code = run_limited(command, dict(env, XDG_CACHE_HOME=str(cache)), group)
                if code == 0:  # finished inside the group; its RSS may pass the limit by pages charged outside it
                    within = "yes" if group is not None or rss <= limit else "no"
                    peak, per_million = f"{rss / 1e6:,.0f}", f"{rss / 1e6 / (kernels / 1e6):.0f}"
                else:  # stopped at the limit (-9) or failed: its peak is the limit, not its need
                    within, peak, per_million = f"no (exit {code})", f"> {limit / 1e6:,.0f}", "–"
                lines.append(f"| {rule.name} | {seconds:.1f} | {peak} | {anonymous / 1e6:,.0f} | {per_million} "
                             f"| {within} |")
                print(lines[-1], flush=True)
                for old in Path(temp).glob("r_*"):
                    old.unlink()
    finally:
        if group is not None:
            group.rmdir()
    (OUT / f"scale_{report.stem}.md").write_text("\n".join(lines) + "\n")
    print(lines[0])


if __name__ == "__main__":
    main()
