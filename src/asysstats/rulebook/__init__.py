"""The rule modules, one per rule family, and their registry: every module listed once with the
rules it declares.

A run imports only the modules of the rules it runs (help and listings import them all):
the modules are imported by name when one of their rules is first asked for, so that
importing one rule module does not import every rule."""

from __future__ import annotations

import difflib
from importlib import import_module
from typing import Any, Iterator, Mapping, Sequence

from asysstats.analysis.declarations import Rule
from asysstats.core.errors import AsysError, quoted


class Registry:
    """Rules by name, in the order an index of modules lists them; a module is imported when
    one of its rules is first asked for. ``aliases``: other names of some rules (nsys 2022's
    report names), found by :meth:`get` and listed nowhere."""

    def __init__(self, package: str, modules: Mapping[str, Sequence[str]],
                 aliases: Mapping[str, str] | None = None) -> None:
        self._package = package
        self._modules = modules
        self._aliases = aliases or {}
        self._module_of: dict[str, str] = {}
        for module, names in modules.items():
            for name in names:
                if name in self._module_of:
                    raise ValueError(f"duplicate rule name {name}")
                self._module_of[name] = module
        self._rules: dict[str, Rule] = {}
        for alias, name in self._aliases.items():
            if alias in self._module_of or name not in self._module_of:
                raise ValueError(f"alias {alias} names a rule or no rule ({name})")

    def __iter__(self) -> Iterator[Rule]:
        return (self._rule(name) for name in self._module_of)

    def __contains__(self, name: str) -> bool:
        return name in self._module_of

    def _rule(self, name: str) -> Rule:
        if name not in self._rules:
            module = self._module_of[name]
            rules = import_module(f"{self._package}.{module}").RULES
            if tuple(r.name for r in rules) != tuple(self._modules[module]):
                raise ValueError(f"module {module} declares {[r.name for r in rules]}, "
                                 f"the index lists {list(self._modules[module])}")
            self._rules.update((r.name, r) for r in rules)
        return self._rules[name]

    def get(self, name: str, command: str = "stats") -> Rule:
        name = self._aliases.get(name, name)
        rule = self._rule(name) if name in self else None
        if rule is not None and (command == "analyze") != (rule.command == "analyze"):
            other = "analyze" if rule.command == "analyze" else "stats"
            raise AsysError(f"rule {quoted(name)} is a rule of 'asys {other}', not of 'asys {command}' "
                            f"(run: asys {other} -r {name} REPORT)")
        if rule is None:
            pool = [r.name for r in self if (r.command == "analyze") == (command == "analyze")]
            near = difflib.get_close_matches(name, pool, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else f" (see 'asys {command} --help-reports')"
            raise AsysError(f"unknown rule {quoted(name)}{hint}")
        return rule


# Module of ``asysstats.rulebook`` -> the names of its ``RULES``, in their order (checked on import).
RULE_MODULES = {
    "kernels": ("hggc_ppu_kern_sum",),
    "api": ("hggc_api_sum", "hggc_api_trace"),
    "kernel_traces": ("hggc_kern_exec_trace", "hggc_ppu_kern_gb_sum", "hggc_ppu_kern_gb_trace"),
    "ppu_trace": ("hggc_ppu_trace",),
    "memory_ops": ("hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum"),
    "osrt": ("osrt_sum",),
    "devices": ("ppu_device_attribute",),
    "metrics": ("ppu_metric_trace",),
    "analyze": ("ppu_gaps", "ppu_time_util"),
    "analyze_idle": ("ppu_idle_breakdown", "ppu_queue_length", "ppu_queue_length_trace"),
    "analyze_memory": ("ppu_memory_bandwidth", "ppu_memory_bandwidth_trace"),
    "analyze_sequences": ("ppu_kernel_sequences",),
    "analyze_launches": ("ppu_launch_trace", "ppu_launch_stats", "ppu_short_kernel_histogram",
                         "ppu_short_kernels"),
    "memory_usage": ("device_memory_usage_summary", "device_memory_usage_detail"),
    "pccl_desync": ("pccl_desync_trace", "pccl_desync_summary"),
    "pccl_ops": ("pccl_op_sum",),
    "pccl_stages": ("pccl_stage_sum",),
    "category": ("hggc_ppu_kern_category_sum",),
    "timeline": ("hggc_ppu_timeline_sum",),
    "time_breakdown": ("hggc_ppu_time_breakdown",),
    "steps": ("hgtx_step_sum",),
    "hgtx_ranges": ("hgtx_sum", "hgtx_pushpop_trace"),
    "hgtx_kernels": ("hgtx_kern_sum", "hgtx_kern_trace"),
    "hgtx_projection": ("hgtx_ppu_proj_sum", "hgtx_ppu_proj_trace"),
    "compare_kernels": ("ppu_kernel_summary_compare",),
    "compare_hgtx": ("hgtx_ppu_projection_summary_compare",),
    "compare_pccl": ("pccl_desync_summary_compare",),
    "compare_time_util": ("ppu_time_util_compare",),
    "operators_summary": ("ppu_op_sum", "ppu_op_type_sum"),
    "operators_moe": ("moe_op_sum",),
    "operators_trace": ("ppu_op_trace",),
    "operators_breakdown": ("ppu_op_kernel_breakdown", "ppu_op_breakdown"),
    "operators_unit_test": ("ppu_op_unit_test",),
    "operators_roofline": ("ppu_op_roofline",),
    "compare_operators": ("ppu_operator_summary_compare", "ppu_operator_type_summary_compare",
                          "ppu_operator_roofline_compare"),
    "compare_breakdown": ("ppu_operator_kernel_breakdown_compare", "ppu_operator_breakdown_compare"),
    "nsys_stats": ("cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "nvtx_sum",
                   "osrtsum"),
    "nsys_runtimes": ("openacc_sum", "openmp_sum", "um_total_sum", "um_sum", "um_cpu_page_faults_sum"),
    "nsys_ranges": ("nvtx_kern_sum", "cuda_api_gpu_sum", "nvtx_gpu_proj_sum", "nvtx_gpu_proj_trace"),
    "nsys_traces": ("cuda_gpu_trace", "cuda_api_trace", "cuda_kern_exec_trace", "cuda_kern_exec_sum",
                    "nvtx_pushpop_trace"),
    "nsys_analyze": ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync", "cuda_api_sync", "gpu_gaps",
                     "gpu_time_util"),
}

# nsys 2022's names of the reports that mirror nsys stats (docs/nsys.md), and NVIDIA's other names of rules.
RULE_ALIASES = {"gpukernsum": "cuda_gpu_kern_sum", "cudaapisum": "cuda_api_sum",
                "gpumemtimesum": "cuda_gpu_mem_time_sum", "gpumemsizesum": "cuda_gpu_mem_size_sum",
                "nvtxsum": "nvtx_sum",
                "nvtxkernsum": "nvtx_kern_sum", "apigpusum": "cuda_api_gpu_sum",
                "gputrace": "cuda_gpu_trace", "cudaapitrace": "cuda_api_trace", "kernexectrace": "cuda_kern_exec_trace",
                "kernexecsum": "cuda_kern_exec_sum",
                "nvtxpptrace": "nvtx_pushpop_trace",
                "gpu_starvation": "gpu_gaps"}  # the Analysis Guide's name of nsys analyze's gpu_gaps (D36)

REGISTRY = Registry("asysstats.rulebook", RULE_MODULES, RULE_ALIASES)

# The default `asys stats` set (Nsight's default set, renamed), limited to existing rules.
DEFAULT_STATS = ("hgtx_sum", "osrt_sum", "hggc_api_sum", "hggc_ppu_kern_sum",
                 "hggc_ppu_mem_time_sum", "hggc_ppu_mem_size_sum")

# The default `asys analyze` set: the asys reference's rules (nsys analyze's run when named, docs/decisions.md D36).
DEFAULT_ANALYZE = ("ppu_gaps", "ppu_time_util")

CHECK_RULE = "report_check"  # `asys stats --check` (also `-r report_check`); not listed among the rules


def check_rule() -> Rule[Any]:
    """The rule of ``--check`` (:mod:`asysstats.rulebook.quality`, imported only when asked for)."""
    from asysstats.rulebook.quality import CHECK

    return CHECK


def find_rule(name: str, command: str = "stats") -> Rule[Any]:
    """The rule ``name`` of ``asys <command>`` (``report_check`` is the rule of ``--check``); an
    error naming the nearest rules when there is none."""
    if (command, name) == ("stats", CHECK_RULE):
        return check_rule()
    return REGISTRY.get(name, command)
