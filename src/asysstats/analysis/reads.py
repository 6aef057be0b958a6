"""What the shared analysis reads of each table: the part of a rule's declaration of what it
reads (:attr:`~asysstats.analysis.declarations.Rule.reads`) that each helper it calls brings.
A rule merges the ones of the helpers it calls with its own (:func:`merged_reads`); the
helpers read through the rule's :class:`~asysstats.analysis.inputs.Inputs`, which holds
them to it."""

from __future__ import annotations

from asysstats.analysis.declarations import merged_reads

HGTX_COLUMNS = ("start", "end", "eventType", "globalTid", "domainId", "text", "textId")
HGTX_READS = {"hgtx": HGTX_COLUMNS}  # the HGTX ranges (hgtx.all_ranges, load_ranges)
CALL_COLUMNS = ("start", "end", "globalTid", "correlationId")
CALL_READS = {"runtime": CALL_COLUMNS}  # the launch calls (launches.runtime_calls)
INNERMOST_READS = merged_reads(CALL_READS, HGTX_READS)  # launches.innermost_range_names
PPU_KINDS = ("kernels", "memcpy", "memset")
ACTIVITY_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "graphNodeId")
ACTIVITY_READS = {kind: ACTIVITY_COLUMNS for kind in PPU_KINDS}  # correlate.ppu_activities
NODE_COLUMNS = ("start", "globalTid", "graphNodeId", "originalGraphNodeId")
CORRELATE_READS = merged_reads(CALL_READS, {"graph_nodes": NODE_COLUMNS})  # correlate.correlate, beyond its ranges
DEVICE_READS = {"devices": ("id", "name")}  # activity.device_names
KIND_READS = {"memcpy_kinds": ("id", "label"), "mem_kinds": ("id", "label")}  # activity.kind_labels
KERNEL_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "demangledName", "shortName", "mangledName")
NAME_COLUMNS = ("demangledName", "mangledName")  # what the name modes read of a kernel
LAUNCH_COLUMNS = ("correlationId", "globalPid")  # what finds a kernel's launch call
# the kernel names of the kernel rules, hgtx-name included (rulebook.kernels.kernel_name_key)
KERNEL_NAME_READS = merged_reads({"kernels": NAME_COLUMNS + LAUNCH_COLUMNS}, INNERMOST_READS)
