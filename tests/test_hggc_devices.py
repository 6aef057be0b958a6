"""ppu_device_attribute and ppu_metric_trace: golden output, old Nsight exports, options,
missing data."""

from __future__ import annotations

import sqlite3

import pytest
from test_hggc_api import csv

from asysstats.synth.writer import NSYS, ReportWriter

from conftest import run_cli

DEVICE_HEADER = ("Row#,Device ID,Device Name,PCI Bus ID,hostname,UUID,Compute capability major,"
                 "Compute capability minor,CE number,CU number,Total memory (bytes),CU clock (Hz),Memory clock (Hz),")
METRIC_HEADER = "Row#,Device ID,Start (ns),Duration (ns),Name,Value,Unit,"
ACTIVE = '"ce__cycles_active.avg.pct_of_peak_sustained_elapsed"'
ELAPSED = '"ce__cycles_elapsed.avg.per_second"'


def test_device_attribute_golden(writer):
    writer.add("devices", id=[1, 0], name=["PPU-ZW810E", "PPU-ZW810E"], busLocation=["00000001:C8:00.0",
               "00000001:C9:00.0"], hostname="host-a", uuid=[None, "GPU-1234"], computeMajor=8, computeMinor=0,
               asyncEngineCount=16, cuCount=64, totalMemory=103079215104, clockRate=1700000000,
               memoryClockRate=[1800000000, None])
    writer.close()
    assert csv(writer.path, "ppu_device_attribute") == [
        DEVICE_HEADER,
        '1,0,"PPU-ZW810E","00000001:C9:00.0","host-a","GPU-1234",8,0,16,64,103079215104,1700000000,"-",',
        '2,1,"PPU-ZW810E","00000001:C8:00.0","host-a","-",8,0,16,64,103079215104,1700000000,1800000000,',
    ]


def test_old_nsight_export_takes_details_from_target_info_cuda_gpu(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, deviceId INTEGER, name TEXT, busLocation TEXT, isDiscrete INT);
        INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'NVIDIA GeForce RTX 3080', '0000:02:00.0', 1);
        CREATE TABLE TARGET_INFO_CUDA_GPU (vmId INTEGER, name TEXT, coreClockRate INTEGER, numMemcpyEngines INTEGER,
            numMultiprocessors INTEGER, globalMemorySize INTEGER, computeCapabilityMajor INTEGER,
            computeCapabilityMinor INTEGER, deviceId INTEGER);
        INSERT INTO TARGET_INFO_CUDA_GPU VALUES (1, 'NVIDIA GeForce RTX 3080', 1740000, 2, 68, 10495524864, 8, 6, 0);
        CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INT, value TEXT);
        INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local', 'OS', 1, 'Linux'), (1, 'Local', 'Hostname', 619, 'node7');
    """)
    con.commit()
    con.close()
    assert csv(path, "ppu_device_attribute")[1:] == [
        '1,0,"NVIDIA GeForce RTX 3080","0000:02:00.0","node7","-",8,6,2,68,10495524864,1740000000,"-",']


def build_metrics(writer):
    writer.add("metric_info", metricId=[1, 2], metricName=["ce__cycles_elapsed.avg.per_second",
               "ce__cycles_active.avg.pct_of_peak_sustained_elapsed"], unit=["cycle/second", "%"])
    # device 0 samples at 1000 and 2000 (no stored end: duration to the next sample, '-' for the last);
    # device 1 one sample [1500,1600); metric 3 has no description
    writer.add("metrics", deviceId=[0, 0, 1, 0, 0, 1], start=[1000, 1000, 1500, 2000, 2000, 3000],
               end=[None, None, 1600, None, None, 3010], metricId=[1, 2, 1, 1, 2, 3],
               value=[1600518599.7, 98.7, 2.0, 1.0, 50.05, 7.0])
    writer.close()
    return writer.path


def test_metric_trace_golden(writer):
    assert csv(build_metrics(writer), "ppu_metric_trace") == [
        METRIC_HEADER,
        f'1,0,1000,1000,{ACTIVE},98.7,"%",',
        f'2,0,1000,1000,{ELAPSED},1600518599.7,"cycle/second",',
        f'3,1,1500,100,{ELAPSED},2.0,"cycle/second",',
        f'4,0,2000,"-",{ACTIVE},50.1,"%",',
        f'5,0,2000,"-",{ELAPSED},1.0,"cycle/second",',
        '6,1,3000,10,"-",7.0,"-",',
    ]


@pytest.mark.parametrize("option, rows", [
    ("device=1", ["3", "6"]),
    ("metrics=active", ["1", "4"]),
    ("metrics=^ce__cycles_e:device=0/1", ["2", "3", "5"]),
    ("device=9", []),
])
def test_metric_trace_options(writer, option, rows):
    full = {line.split(",", 1)[1]: line.split(",", 1)[0] for line in csv(build_metrics(writer), "ppu_metric_trace")}
    lines = csv(writer.path, f"ppu_metric_trace:{option}")
    assert lines[0] == METRIC_HEADER
    assert [full[line.split(",", 1)[1]] for line in lines[1:]] == rows


def test_metric_trace_bad_regex_is_one_line(writer):
    run = run_cli("stats", "-r", "ppu_metric_trace:metrics=(", build_metrics(writer))
    assert run.code == 2 and run.err.count("\n") == 1 and "'metrics'" in run.err


def test_missing_tables_name_the_collection_option(tmp_path):
    w = ReportWriter(tmp_path / "r.sqlite", dialect=NSYS)
    w.add("runtime", start=[0], end=[1], globalTid=1, nameId=[w.string("x")])
    w.close()
    run = run_cli("stats", "-r", "ppu_metric_trace", w.path)
    assert run.code == 2 and "(collect with nsys profile --gpu-metrics-devices all)" in run.err
    run = run_cli("stats", "-r", "ppu_device_attribute", w.path)
    assert run.code == 2 and "does not contain GPU device data (collect with nsys profile --trace cuda)" in run.err
