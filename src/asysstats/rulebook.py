"""The rule registry: every rule module is listed here, once, in one place.

It lives outside the ``rules`` package so that importing one rule module (or a helper in
``rules/``) does not import every rule: operator code imports helpers from ``rules/`` and
is itself imported by rule modules."""

from __future__ import annotations

from asysstats.registry import Registry
from asysstats.rules import kernels
from asysstats.rules import analyze, api, devices, kernel_traces, memory_ops, metrics, osrt, ppu_trace
from asysstats.rules import memory_usage
from asysstats.rules import pccl_desync
from asysstats.rules import pccl_ops
from asysstats.rules import pccl_stages
from asysstats.rules import category
from asysstats.rules import timeline
from asysstats.rules import time_breakdown
from asysstats.rules import steps
from asysstats.rules import hgtx_kernels, hgtx_projection, hgtx_ranges
from asysstats.rules import operators_breakdown, operators_moe, operators_summary, operators_trace, operators_unit_test
from asysstats.rules import compare_breakdown, compare_hgtx, compare_kernels, compare_operators, compare_pccl
from asysstats.rules import compare_time_util

REGISTRY = Registry([
    *kernels.RULES,
    *api.RULES, *kernel_traces.RULES, *ppu_trace.RULES, *memory_ops.RULES,
    *osrt.RULES, *devices.RULES, *metrics.RULES, *analyze.RULES,
    *memory_usage.RULES,
    *pccl_desync.RULES,
    *pccl_ops.RULES,
    *pccl_stages.RULES,
    *category.RULES,
    *timeline.RULES,
    *time_breakdown.RULES,
    *steps.RULES,
    *hgtx_ranges.RULES, *hgtx_kernels.RULES, *hgtx_projection.RULES,
    *compare_kernels.RULES, *compare_hgtx.RULES, *compare_pccl.RULES, *compare_time_util.RULES,
    *operators_summary.RULES, *operators_moe.RULES, *operators_trace.RULES, *operators_breakdown.RULES, *operators_unit_test.RULES,
    *compare_operators.RULES, *compare_breakdown.RULES,
])

# The default `asys stats` set (Nsight's default set, renamed), limited to existing rules.
DEFAULT_STATS = ("hgtx_sum", "osrt_sum", "hggc_api_sum", "hggc_ppu_kern_sum",
                 "hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum")
