"""Assembly of the unit-test script: header, one function per test, the runner, the list of
operators without a test. The runner's options: ``--top N`` (the tests of the N operators
with the longest total time), ``--warm-up N`` (untimed runs, default 0), ``--repeat N`` (timed
runs averaged, default 1), ``--test a,b`` (tests by name), ``--device``, ``--dtype`` (inputs
of PyTorch operators), ``--list``."""

from __future__ import annotations

from asysstats.analysis.operators.unittest_gen import Entry, body, test_name

HEADER = '''#!/usr/bin/env python3
"""Unit tests of the PPU operators of {report} (asys stats -r ppu_op_unit_test).

One test per operator, in descending order of total time on the PPU. Examples:
    python {script} --top 3 --warm-up 5 --repeat 5
    python {script} --test {example}
"""

import argparse
import sys
import time

try:
    import torch
except ImportError:  # the tests skip cleanly without PyTorch
    torch = None


def rand(shape, dtype, device, requires_grad=False):
    return torch.randn(shape, device=device).to(dtype).requires_grad_(requires_grad)
'''

RUNNER = '''

def synchronize(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Time the PPU operators of {report} with PyTorch.")
    parser.add_argument("--top", type=int, metavar="N", help="run the tests of the N operators with the longest "
                        "total time (default: all)")
    parser.add_argument("--warm-up", type=int, default=0, metavar="N", help="untimed runs before timing (default 0)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="timed runs to average (default 1)")
    parser.add_argument("--test", metavar="NAMES", help="run only these tests, separated by ','")
    parser.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--dtype", default="float32", help="data type of PyTorch operator inputs (default float32)")
    parser.add_argument("--list", action="store_true", help="list the tests and exit")
    args = parser.parse_args(argv)
    if args.warm_up < 0 or args.repeat < 1 or (args.top is not None and args.top < 1):
        parser.error("--warm-up must be >= 0, --repeat and --top >= 1")
    chosen = [t for t in TESTS if args.top is None or t[0] <= args.top]
    if args.test:
        names = [n.strip() for n in args.test.split(",") if n.strip()]
        unknown = sorted(set(names) - {{t[1] for t in TESTS}})
        if unknown:
            parser.error("unknown test(s): " + ", ".join(unknown))
        chosen = [t for t in chosen if t[1] in names]
    if args.list:
        for rank, name, _, kind, operator in chosen:
            print(f"{{name}}  [{{kind}}] {{operator}}")
        return 0
    if torch is None:
        print(f"SKIP: PyTorch is not installed; {{len(chosen)}} test(s) not run")
        return 0
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, args.dtype)
    for rank, name, make, kind, operator in chosen:
        try:
            with torch.no_grad() if "backward" not in make.__doc__ else torch.enable_grad():
                run = make(device, dtype)
                for _ in range(args.warm_up):
                    run()
                synchronize(device)
                begin = time.perf_counter()
                for _ in range(args.repeat):
                    run()
                synchronize(device)
        except Exception as exc:  # an operator the local PyTorch cannot run is skipped
            print(f"SKIP {{name}}: {{type(exc).__name__}}: {{str(exc).splitlines()[0] if str(exc) else ''}}")
            continue
        average = (time.perf_counter() - begin) / args.repeat * 1e6
        print(f"{{name}}: {{average:.1f}} us per run ({{args.repeat}} run(s), device {{device}})  [{{kind}}] {{operator}}")
    if NOT_GENERATED:
        print(f"{{len(NOT_GENERATED)}} operator(s) without a unit test (listed at the end of this script)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def script_lines(report: str, entries: list[Entry]) -> list[str]:
    """The script as lines, tests in ``entries`` order (descending total time)."""
    tests, skipped, functions, names = [], [], [], {}
    for entry in entries:
        lines, reason = body(entry.parsed)
        if lines is None:
            skipped.append((entry, reason))
            continue
        name = test_name(entry)
        doc = "backward" if entry.parsed is not None and entry.parsed.params.get("backward") else "forward"
        functions += ["", "", f"def {name}(device, dtype):",
                      f'    """{doc}: {entry.type} operator #{entry.rank}, {entry.instances} instance(s), '
                      f'total {entry.total} ns."""']
        functions += [f"    {line}" for line in lines]
        tests.append(f"    ({entry.rank}, {name!r}, {name}, {entry.type!r}, {entry.name!r}),")
        names[entry.rank] = name
    example = next(iter(names.values()), "test_001_op")
    script = f"{report}_ppu_op_unit_test.py"
    text = HEADER.format(report=report, script=script, example=example).splitlines()
    text += functions
    text += ["", "", "# (rank, test name, set-up, operator type, operator name), in descending total time",
             "TESTS = ["] + tests + ["]", "", "# operators without a unit test: (rank, type, name, reason)",
             "NOT_GENERATED = ["]
    text += [f"    ({e.rank}, {e.type!r}, {e.name!r}, {reason!r})," for e, reason in skipped] + ["]"]
    text += RUNNER.format(report=report).splitlines()
    text += ["", "# Operators and their tests:"]
    for entry in entries:
        test = names.get(entry.rank, "not generated")
        text.append(f"#   {entry.rank}. [{entry.type}] {one_line(entry.name)} -> {test}")
    return text


def one_line(text: str, width: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."
