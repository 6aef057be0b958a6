"""The ``hgtx-name`` option of the kernel rules: the innermost HGTX range enclosing the launch
call on the launching thread prefixes the kernel name (docs/decisions.md D10)."""

from __future__ import annotations

import pytest
from test_hggc_api import csv

PID = 100
T1, T2 = (PID << 24) | 101, (PID << 24) | 102
ADD = "add(int*, int*, int*)"


def build(writer):
    outer, inner, dom, step, launch, add = writer.strings(["outer", "inner", "dom", "step", "hggcLaunchKernel",
                                                           "_Z3addPiS_S_"])
    # thread 101:  outer [0,1000)  ⊃  inner [100,300)         dom:step [500,600) (start/end, domain 5)
    # launches:      corr1 @150 (inner)  corr2 @400 (outer)    corr3 @550 (dom:step)   corr4 @2000 (none)
    # thread 102:    corr5 @150 (no range on this thread)
    writer.add("hgtx", start=[0, 0, 100, 500], end=[None, 1000, 300, 600], eventType=[75, 59, 59, 60],
               globalTid=T1, domainId=[5, 0, 0, 5], textId=[dom, outer, inner, step])
    writer.add("runtime", start=[150, 400, 550, 2000, 150], end=[160, 410, 560, 2010, 160],
               globalTid=[T1, T1, T1, T1, T2], correlationId=[1, 2, 3, 4, 5], nameId=launch)
    writer.add("kernels", start=[170, 420, 570, 2020, 180], end=[180, 450, 630, 2100, 190], deviceId=0,
               correlationId=[1, 2, 3, 4, 5], globalPid=PID << 24, demangledName=add, mangledName=add,
               gridX=1, gridY=1, gridZ=1, blockX=1, blockY=1, blockZ=1)
    writer.close()
    return writer.path


def test_kern_sum_hgtx_name(writer):
    names = [line.split(",", 9)[-1] for line in csv(build(writer), "hggc_ppu_kern_sum:hgtx-name")[1:]]
    assert names == [f'"{ADD}",', f'"dom:step/{ADD}",', f'"outer/{ADD}",', f'"inner/{ADD}",']


@pytest.mark.parametrize("rule, expected", [
    ("hggc_ppu_kern_gb_sum:hgtx-name:base", ['"add",', '"dom:step/add",', '"outer/add",', '"inner/add",']),
    ("hggc_ppu_kern_gb_trace:hgtx-name:mangled",
     ['"inner/_Z3addPiS_S_",', '"_Z3addPiS_S_",', '"outer/_Z3addPiS_S_",', '"dom:step/_Z3addPiS_S_",',
      '"_Z3addPiS_S_",']),
    ("hggc_ppu_trace:hgtx-name:base", ['"inner/add",', '"add",', '"outer/add",', '"dom:step/add",', '"add",']),
])
def test_other_kernel_rules_take_hgtx_name(writer, rule, expected):
    assert [line.rsplit(",", 2)[-2] + "," for line in csv(build(writer), rule)[1:]] == expected


def test_without_hgtx_data_names_are_unprefixed(writer):
    add = writer.string("_Z3addPiS_S_")
    writer.add("kernels", start=[0], end=[5], deviceId=0, correlationId=[1], globalPid=PID << 24, demangledName=add)
    writer.close()
    assert csv(writer.path, "hggc_ppu_kern_sum:hgtx-name")[1].endswith(f',"{ADD}",')
