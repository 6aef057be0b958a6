"""PPU device attributes (``ppu_device_attribute``): one row per device, by device id.

Nsight Systems exports lack some fields (memory clock; CE/CU numbers, clocks and compute
capability in old exports, which keep them in ``TARGET_INFO_CUDA_GPU`` with the clock in
kHz) and keep the host name in ``TARGET_INFO_SYSTEM_ENV``; missing fields print ``-``.
"""

from __future__ import annotations

import numpy as np

from asysstats.analysis.activity import row_index, take_or_na
from asysstats.analysis.declarations import RowsOptions, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.core.result import INT, TEXT, Column, Frame
from asysstats.core.tables import NA

COLUMNS = (
    Column("Device ID", INT, "PPU device identifier"),
    Column("Device Name", TEXT, "PPU device name"),
    Column("PCI Bus ID", TEXT, "PCI bus identifier"),
    Column("hostname", TEXT, "Host name of the machine with the device"),
    Column("UUID", TEXT, "Universally unique identifier of the device"),
    Column("Compute capability major", INT, "Major version of the compute capability"),
    Column("Compute capability minor", INT, "Minor version of the compute capability"),
    Column("CE number", INT, "Number of copy engines (CEs)"),
    Column("CU number", INT, "Number of compute units (CUs)"),
    Column("Total memory (bytes)", INT, "Total device memory"),
    Column("CU clock (Hz)", INT, "Maximum compute unit clock"),
    Column("Memory clock (Hz)", INT, "Maximum memory clock"),
)
# Device field, and the TARGET_INFO_CUDA_GPU field (with its scale to the unit) that stands in for it.
LEGACY = {"computeMajor": ("computeCapabilityMajor", 1), "computeMinor": ("computeCapabilityMinor", 1),
          "asyncEngineCount": ("numMemcpyEngines", 1), "cuCount": ("numMultiprocessors", 1),
          "totalMemory": ("globalMemorySize", 1), "clockRate": ("coreClockRate", 1000)}
NUMBERS = ("computeMajor", "computeMinor", "asyncEngineCount", "cuCount", "totalMemory", "clockRate", "memoryClockRate")
READS = {"devices": ("id", "name", "busLocation", "hostname", "uuid") + NUMBERS,
         "legacy_gpus": ("deviceId",) + tuple(source for source, _ in LEGACY.values()),
         "system_env": ("name", "value")}


def host_name_id(inputs: Inputs) -> int:
    """The ``Hostname`` entry of ``TARGET_INFO_SYSTEM_ENV`` (Nsight exports), else -1."""
    env = inputs.table("system_env", ("name", "value"))
    hits = np.flatnonzero(inputs.strings.lookup(env["name"]) == "Hostname")
    return int(env["value"][hits[0]]) if len(hits) else -1


def field(devices, legacy, rows: np.ndarray, name: str) -> np.ndarray:
    """A numeric device field; ``NA`` where neither table has it."""
    values = devices[name]
    if name in LEGACY:
        source, scale = LEGACY[name]
        old = take_or_na(legacy[source], rows)
        values = np.where(values >= 0, values, np.where(old >= 0, old * scale, NA))
    return np.where(values >= 0, values, NA)


def device_attributes(inputs: Inputs, options: RowsOptions) -> Frame:
    devices = inputs.table("devices")
    legacy = inputs.table("legacy_gpus")
    rows = row_index([legacy["deviceId"]], [devices["id"]])
    rank = inputs.strings.sort_rank(devices["name"])
    order = np.lexsort((devices["busLocation"], rank, devices["id"]))
    devices, rows = devices.take(order), rows[order]
    host = np.where(devices["hostname"] >= 0, devices["hostname"], host_name_id(inputs))
    number = {name: field(devices, legacy, rows, name) for name in NUMBERS}
    return {"Device ID": devices["id"], "Device Name": devices["name"], "PCI Bus ID": devices["busLocation"],
            "hostname": host, "UUID": devices["uuid"],
            "Compute capability major": number["computeMajor"], "Compute capability minor": number["computeMinor"],
            "CE number": number["asyncEngineCount"], "CU number": number["cuCount"],
            "Total memory (bytes)": number["totalMemory"], "CU clock (Hz)": number["clockRate"],
            "Memory clock (Hz)": number["memoryClockRate"]}


DEVICE_ATTRIBUTE = Rule(
    name="ppu_device_attribute",
    title="PPU Device Attributes",
    help="Attributes of every PPU device, in ascending order of device id. Clocks are the maximum "
         "supported frequencies, not the current ones.",
    columns=COLUMNS,
    compute=device_attributes,
    reads=READS,
    options=RowsOptions,
)

RULES = [DEVICE_ATTRIBUTE]
