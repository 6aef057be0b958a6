"""Step programs: the host-side order of HGTX ranges, API calls and the device work they launch.

A program is written once per kind of step (a Python loop over the ops of one step, not
over events) and simulated for every device and variant at once by ``simulate``.
Durations are medians in microseconds. Range texts are ``str.format`` patterns whose
fields are filled per event when the steps are tiled (see ``tile.FIELDS``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Union

MEMCPY_HTOD, MEMCPY_DTOH, MEMCPY_DTOD = 1, 2, 8
PAGEABLE, PINNED, DEVICE = 1, 2, 3  # memory kinds, numbered as the writer's ENUM table
LAUNCH_US = 4.5


@dataclass(frozen=True)
class Work:
    """Device work of one API call: a kernel, a memcpy or a memset."""

    table: str
    us: float
    key: str = ""  # kernel key in catalog.KERNELS
    collective: bool = False  # a PCCL kernel: ends on every rank after the last rank joined
    chained: bool = False  # in variant 0, ranks run one after another (chained overlaps)
    proxy: bool = False  # the PCCL proxy threads record transfer stages (ring algorithms)
    bytes: int = 0
    copy_kind: int | None = None
    src_kind: int | None = None
    dst_kind: int | None = None  # also the memory kind of a memset
    graph: tuple[int, int] | None = None  # (graphId, graphNodeId) when run from a graph
    stream: int = 7


@dataclass(frozen=True)
class Call:
    api: str
    us: float
    work: tuple[Work, ...] = ()
    ret: int = 0
    sync: bool = False  # returns when the streams are idle
    callchain: str | None = None
    memory: tuple[int, int, int] | None = None  # (operation 0 alloc / 1 free, address, bytes)
    nodes: tuple[tuple[int, int, int | None], ...] = ()  # graph nodes created: (graphId, nodeId, original)
    inner_os: str | None = None  # an OS call made inside this API call


@dataclass(frozen=True)
class Push:
    text: str
    domain: str | None = None


@dataclass(frozen=True)
class Pop:
    pass


@dataclass(frozen=True)
class Mark:
    text: str
    thread: str = "main"


@dataclass(frozen=True)
class Domain:
    name: str


@dataclass(frozen=True)
class RangeStart:
    key: str
    text: str
    thread: str = "main"


@dataclass(frozen=True)
class RangeEnd:
    key: str
    thread: str = "main"


@dataclass(frozen=True)
class Gap:
    us: float


@dataclass(frozen=True)
class OsCall:
    """An OS runtime call: on the main thread it takes host time; elsewhere it starts now."""

    name: str
    us: float
    thread: str = "main"
    ret: int = 0


Op = Union[Call, Push, Pop, Mark, Domain, RangeStart, RangeEnd, Gap, OsCall]


@dataclass
class Program:
    """The ops of one kind of step in host order, with the autograd op-id offsets it uses."""

    kind: str
    ops: list[Op] = field(default_factory=list)
    op_ids: int = 0  # autograd op ids used by one step
    seqs: int = 0

    def add(self, *ops: Op) -> None:
        self.ops.extend(ops)

    @contextmanager
    def range(self, text: str, domain: str | None = None) -> Iterator[None]:
        self.add(Push(text, domain))
        yield
        self.add(Pop())

    @contextmanager
    def aten(self, name: str, sizes: str) -> Iterator[None]:
        """A PyTorch autograd range; its op id advances by 1-3 (internal ops take ids too)."""
        prev = self.op_ids
        self.op_ids += 1 + self.seqs % 3
        text = (f"{name}, seq = {{seq{self.seqs}}}, op_id = {{op{self.op_ids}}}, sizes = {sizes}, "
                f"input_op_ids = [({{op{prev}}},0), (0,-1)]")
        self.seqs += 1
        self.add(Gap(9.0))
        with self.range(text):
            yield

    def launch(self, key: str, us: float, **work) -> None:
        self.add(Call("hggcLaunchKernel", LAUNCH_US, (Work("kernels", us, key, **work),)))

    def memcpy(self, api: str, kind: int, nbytes: int, src: int, dst: int, us: float, api_us: float = 6.0) -> None:
        self.add(Call(api, api_us, (Work("memcpy", us, bytes=nbytes, copy_kind=kind, src_kind=src, dst_kind=dst),)))

    def memset(self, nbytes: int, us: float) -> None:
        self.add(Call("hggcMemsetAsync", 4.0, (Work("memset", us, bytes=nbytes, dst_kind=DEVICE),)))

    def collective(self, text: str, key: str, us: float, chained: bool = False, proxy: bool = True) -> None:
        work = Work("kernels", us, key, collective=True, chained=chained, proxy=proxy)
        with self.range(text, "NCCL"):
            self.add(Call("hggcLaunchKernel", 7.0, (work,)))
