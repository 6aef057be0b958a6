"""The checks that run with the tests: the layers contract, no import cycle, the type checker,
and a start-up that imports no more of the package than it did."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample.asysrep"
STARTUP_MODULES = 45  # what a warm hggc_ppu_kern_sum run imported of asysstats before the layers


def tool(name: str) -> str:
    """A console script of this environment (next to the interpreter)."""
    found = Path(sys.executable).with_name(name)
    if not found.exists():
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return str(found)


def test_the_layers_import_downward_only():
    done = subprocess.run([tool("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "Contracts: 1 kept, 0 broken" in done.stdout, done.stdout[-2000:]


def strongly_connected(graph: grimp.ImportGraph) -> list[set[str]]:
    """The import cycles: strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_module_imports_itself_through_others():
    """Imports at run time, in functions included; those read by the type checker only are not."""
    graph = grimp.build_graph("asysstats", exclude_type_checking_imports=True)
    assert strongly_connected(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("def f():\n    from cyclic import c\n")
    (package / "c.py").write_text("import cyclic.a\n")
    (package / "d.py").write_text("import cyclic.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert strongly_connected(grimp.build_graph("cyclic")) == [{"cyclic.a", "cyclic.b", "cyclic.c"}]


def test_the_type_checker_finds_no_error():
    done = subprocess.run([tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_kernel_summary_imports_no_more_of_the_package_than_before():
    code = ("import sys\nfrom asysstats.cli import main\n"
            f"sys.argv = ['asys', 'stats', '-r', 'hggc_ppu_kern_sum', '--format', 'csv', {str(SAMPLE)!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'asysstats'))")
    for _ in range(2):  # the second run reads the column cache, as a user's runs after the first do
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = ast.literal_eval(done.stdout.splitlines()[-1])
    assert len(imported) <= STARTUP_MODULES, imported
    assert not {"asysstats.api.comparing", "asysstats.api.tables", "asysstats.cli.helptext",
                "asysstats.analysis.hgtx", "asysstats.writing.jsonlines"} & set(imported)


def test_the_architecture_page_names_every_module():
    """docs/architecture.md draws the tree as it is: every package and module of src/ is on it."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "src" / "asysstats"
    missing = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if path.stem != "__init__" and path.stem not in page]
    missing += [f"{path.relative_to(package)}/" for path in sorted(package.rglob("*"))
                if path.is_dir() and path.name != "__pycache__" and f"{path.name}/" not in page]
    assert missing == []
