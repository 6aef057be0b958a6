"""The rule registry: every rule module is listed here, once, in one place."""

from __future__ import annotations

from asysstats.registry import Registry
from asysstats.rules import kernels

REGISTRY = Registry([
    *kernels.RULES,
])

# The default `asys stats` set (Nsight's default set, renamed), limited to existing rules.
DEFAULT_STATS = ("hgtx_sum", "osrt_sum", "hggc_api_sum", "hggc_ppu_kern_sum",
                 "hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum")
