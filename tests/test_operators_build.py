"""A small builder of operator reports for the operator rule tests (and a check of the builder).

Ranges are push/pop HGTX ranges on one thread; a kernel is launched by an API call at
``launch`` (10 ns long) with its own correlation id, so it correlates with the ranges
holding ``launch``. Range ids are HGTX row ids, in the order rows are added (domain
creations first); Activity IDs are kernel row ids, then memcpy, then memset rows.
"""

from __future__ import annotations

from conftest import run_cli

PUSHPOP, DOMAIN = 59, 75
PID = 100


def gtid(pid: int, tid: int) -> int:
    return (pid << 24) | tid


class Build:
    """Collects HGTX ranges, launches, kernels and devices, then writes the report."""

    def __init__(self, writer, pid: int = PID) -> None:
        self.w, self.pid = writer, pid
        self.domains: dict[str, int] = {}
        self.corr = 0
        self.ranges: list[tuple] = []

    def thread(self, tid: int | None = None) -> int:
        return gtid(self.pid, tid or self.pid)

    def domain(self, name: str) -> int:
        """Declare a domain (call before adding ranges: creation rows come first)."""
        self.domains[name] = len(self.domains) + 1
        self.w.add("hgtx", start=[0], end=[None], eventType=DOMAIN, text=[name], globalTid=self.thread(),
                   domainId=self.domains[name])
        return self.domains[name]

    def range(self, text: str, start: int, end: int, domain: str | None = None, tid: int | None = None) -> None:
        self.w.add("hgtx", start=[start], end=[end], eventType=PUSHPOP, text=[text], globalTid=self.thread(tid),
                   domainId=self.domains[domain] if domain else 0)

    def kernel(self, name: str, start: int, end: int, launch: int, device: int = 0, stream: int = 7,
               tid: int | None = None, graph_node: int | None = None, api: str = "hggcLaunchKernel") -> None:
        self.corr += 1
        self.w.add("runtime", start=[launch], end=[launch + 10], globalTid=self.thread(tid), correlationId=[self.corr],
                   nameId=self.w.string(api))
        sid = self.w.string(name)
        self.w.add("kernels", start=[start], end=[end], deviceId=[device], contextId=1, streamId=[stream],
                   correlationId=[self.corr], globalPid=self.pid << 24, demangledName=sid, shortName=sid,
                   mangledName=sid, graphNodeId=[graph_node] if graph_node is not None else [None])

    def memset(self, start: int, end: int, launch: int, device: int = 0) -> None:
        self.corr += 1
        self.w.add("runtime", start=[launch], end=[launch + 10], globalTid=self.thread(), correlationId=[self.corr],
                   nameId=self.w.string("hggcMemsetAsync"))
        self.w.add("memset", start=[start], end=[end], deviceId=[device], contextId=1, streamId=7,
                   correlationId=[self.corr], globalPid=self.pid << 24, value=0, bytes=64, memKind=3)

    def device(self, device: int, name: str, **figures) -> None:
        self.w.add("devices", id=[device], name=[name], **{k: [v] for k, v in figures.items()})

    def close(self):
        self.w.create("memcpy")
        self.w.create("memset")
        self.w.close()
        return self.w.path


def csv(path, rule: str, *extra: str) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return run.out.splitlines()


def table(lines: list[str]) -> list[list[str]]:
    """CSV lines (header first) as cell lists without the header and the trailing empty cell."""
    import csv as csv_module

    return [row[:-1] for row in csv_module.reader(lines[1:])]


def test_builder_writes_a_readable_report(writer):
    b = Build(writer)
    b.device(0, "PPU-ZW810E")
    b.range("aten::add, seq = 1", 100, 200)
    b.kernel("add_kernel", 1000, 1500, launch=150)
    assert csv(b.close(), "ppu_op_trace")[1] == (
        '1,"PyTorch","aten::add, seq = 1",1000,500,1,1,100,0,1,7,1000,500,"add_kernel",')
