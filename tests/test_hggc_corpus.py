"""Every HGGC / OS runtime / device / analyze rule on every Nsight corpus file: no traceback,
the report untouched, and totals equal to SQL over the same tables."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from conftest import corpus_params, fingerprint, run_cli

STATS_RULES = ("hggc_api_sum", "hggc_api_trace", "hggc_kern_exec_trace", "hggc_ppu_kern_gb_sum",
               "hggc_ppu_kern_gb_trace", "hggc_ppu_trace", "hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum",
               "osrt_sum", "ppu_device_attribute", "ppu_metric_trace", "hggc_ppu_kern_sum:hgtx-name",
               "hggc_ppu_kern_gb_sum:hgtx-name:base", "hggc_ppu_trace:hgtx-name")
ANALYZE_RULES = ("ppu_gaps:gap=0", "ppu_time_util")


def rows(path, rule: str, command: str = "stats") -> list[dict] | None:
    """The rule's JSON rows, or None when the report lacks its data (exit 2, one line)."""
    run = run_cli(command, "-r", rule, "--format", "json", path)
    assert "Traceback" not in run.err
    if run.code == 2:
        assert "does not contain" in run.err and run.err.count("\n") == 1, run.err
        return None
    assert run.code == 0, run.err
    return json.loads(run.out)


def sql(con: sqlite3.Connection, query: str) -> list[tuple]:
    try:
        return con.execute(query).fetchall()
    except sqlite3.OperationalError:  # the table is absent
        return []


@pytest.mark.parametrize("path", corpus_params())
def test_every_rule_runs_and_agrees_with_sql(path):
    before = fingerprint(path)
    results = {rule: rows(path, rule) for rule in STATS_RULES}
    results.update({rule: rows(path, rule, "analyze") for rule in ANALYZE_RULES})
    assert fingerprint(path) == before
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    counts = {t: sql(con, f"SELECT count(*), sum(end - start) FROM {t}") for t in (
        "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET", "OSRT_API")}
    for rule, table, count in (("hggc_api_sum", "CUPTI_ACTIVITY_KIND_RUNTIME", "Num Calls"),
                               ("osrt_sum", "OSRT_API", "Num Calls")):
        if results[rule] is not None:
            assert (sum(r[count] for r in results[rule]), sum(r["Total Time (ns)"] for r in results[rule])) == \
                tuple(v or 0 for v in counts[table][0])
    if results["hggc_ppu_trace"] is not None:
        activity = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        assert len(results["hggc_ppu_trace"]) == sum(counts[t][0][0] for t in activity if counts[t])
        starts = [r["Start (ns)"] for r in results["hggc_ppu_trace"]]
        assert starts == sorted(starts)
    if results["hggc_ppu_mem_time_sum"] is not None:
        memory = [counts[t][0] for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET") if counts[t]]
        assert sum(r["Count"] for r in results["hggc_ppu_mem_time_sum"]) == sum(c for c, _ in memory)
        assert sum(r["Total Time (ns)"] for r in results["hggc_ppu_mem_time_sum"]) == sum(s or 0 for _, s in memory)
    if results["hggc_kern_exec_trace"] is not None:
        launched = sql(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM "
                            "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND "
                            "(r.globalTid >> 24) = (k.globalPid >> 24))")
        assert len(results["hggc_kern_exec_trace"]) == launched[0][0]
    if results["hggc_api_trace"] is not None:
        assert not any(re.search(r"_v[0-9]{4}$", r["Name"]) for r in results["hggc_api_trace"])
    if results["ppu_device_attribute"] is not None:
        assert len(results["ppu_device_attribute"]) == sql(con, "SELECT count(*) FROM TARGET_INFO_GPU")[0][0]
    for rule in ("hggc_ppu_kern_sum:hgtx-name", "hggc_ppu_kern_gb_sum:hgtx-name:base"):
        if results[rule] is not None:
            assert sum(r["Total Time (ns)"] for r in results[rule]) == counts["CUPTI_ACTIVITY_KIND_KERNEL"][0][1]
    con.close()
