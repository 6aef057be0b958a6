"""One contract over the whole registry: help, options, bad values, empty tables, docs in step."""

from __future__ import annotations

from pathlib import Path

import pytest

from asysstats.cli.helptext import rule_help, rules_markdown
from asysstats.core.result import ASYS, COLUMN_KINDS
from asysstats.reading.schema import ASYSREP, NSYS, TABLES
from asysstats.rulebook import REGISTRY, Registry
from asysstats.synth.writer import ENUMS, ReportWriter

from conftest import fingerprint, run_cli

SINGLE = [r for r in REGISTRY if r.reports == 1]
DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def empty(path: Path, dialect: str = ASYSREP) -> Path:
    """A report of ``dialect`` in which every table exists, none has rows."""
    writer = ReportWriter(path, dialect)
    for name in TABLES:
        if name not in ENUMS:  # the writer always writes the enumerations
            for physical in range(len(TABLES[name].physical[dialect])):
                writer.create(name, physical)
    writer.close()
    return writer.path


@pytest.fixture(scope="module")
def empty_report(tmp_path_factory) -> Path:
    return empty(tmp_path_factory.mktemp("empty") / "empty.asysrep")


@pytest.fixture(scope="module")
def empty_nsys_report(tmp_path_factory) -> Path:
    """For the rules of tables only an Nsight export holds (OpenACC, OpenMP, unified memory faults)."""
    return empty(tmp_path_factory.mktemp("empty") / "empty.sqlite", NSYS)


def nsys_only(rule) -> bool:
    return not any(TABLES[name].physical[ASYSREP] for name in rule.required_tables)


@pytest.mark.parametrize("rule", list(REGISTRY), ids=lambda r: r.name)
def test_declaration_is_complete(rule):
    assert rule.title and rule.help and rule.columns
    assert len({c.name for c in rule.columns}) == len(rule.columns)
    assert all(c.kind in COLUMN_KINDS and c.help for c in rule.columns)
    assert all(o.help for o in rule.all_options)
    text = rule_help(rule)
    assert rule.name in text and all(c.name in text for c in rule.columns)


@pytest.mark.parametrize("rule", SINGLE, ids=lambda r: r.name)
def test_empty_tables_give_the_declared_header(rule, empty_report, empty_nsys_report):
    command = "analyze" if rule.command == "analyze" else "stats"
    empty_report = empty_nsys_report if nsys_only(rule) else empty_report
    before = fingerprint(empty_report)
    run = run_cli(command, "-r", rule.name, "--format", "csv", empty_report)
    assert run.code == 0, run.err
    printed = rule.select_columns(None, rule.options())  # without the optional columns their flags leave off
    trailing = "," * (rule.mirrors == ASYS)  # nsys stats' CSV ends a line without one (docs/decisions.md D31)
    assert run.out.splitlines() == [",".join(["Row#"] * rule.numbered + [c.name for c in printed]) + trailing]
    assert fingerprint(empty_report) == before


@pytest.mark.parametrize("rule", SINGLE, ids=lambda r: r.name)
def test_bad_option_values_are_one_line_errors(rule, empty_report):
    command = "analyze" if rule.command == "analyze" else "stats"
    run = run_cli(command, "-r", f"{rule.name}:no-such-option", empty_report)
    assert run.code == 2 and run.err.count("\n") == 1 and "no-such-option" in run.err
    for option in rule.all_options:
        if option.kind in ("int", "int_list"):
            run = run_cli(command, "-r", f"{rule.name}:{option.name}=ten", empty_report)
            assert run.code == 2 and run.err.count("\n") == 1 and f"'{option.name}'" in run.err
        if option.kind in ("regex", "regex_list"):
            run = run_cli(command, "-r", f"{rule.name}:{option.name}=(", empty_report)
            assert run.code == 2 and run.err.count("\n") == 1 and "invalid regular expression" in run.err


def test_docs_rules_md_is_generated_from_the_declarations():
    assert DOCS.read_text(encoding="utf-8") == rules_markdown(REGISTRY), \
        "docs/rules.md is stale: python -m asysstats.cli.helptext > docs/rules.md"


def test_the_registry_index_must_match_the_rule_modules():
    listed_wrong = Registry("asysstats.rulebook", {"kernels": ("hggc_ppu_kern_sum", "no_such_rule")})
    with pytest.raises(ValueError, match="declares"):
        listed_wrong.get("hggc_ppu_kern_sum")
    with pytest.raises(ValueError, match="duplicate"):
        Registry("asysstats.rulebook", {"kernels": ("hggc_ppu_kern_sum",), "api": ("hggc_ppu_kern_sum",)})


@pytest.mark.parametrize("rule", list(REGISTRY), ids=lambda r: r.name)
def test_what_a_rule_reads_is_declared_by_the_schema(rule):
    assert rule.reads and set(rule.required_tables) <= set(rule.reads) | set(TABLES)
    for table, columns in rule.reads.items():
        known = {c.name for c in TABLES[table].columns}
        assert columns and set(columns) <= known, f"{rule.name}: {table} {set(columns) - known}"


def variants(rule) -> list[dict]:
    """The rule's defaults, then each flag on and each other choice, one at a time."""
    out: list[dict] = [{}]
    for option in rule.all_options:
        if option.kind == "flag":
            out.append({option.name: None})
        elif option.kind == "choice":
            out += [{option.name: choice} for choice in option.choices if choice != option.default]
    return [v for v in out if not {"base", "mangled"} <= set(v)]


@pytest.mark.parametrize("rule", list(REGISTRY), ids=lambda r: r.name)
def test_a_rule_reads_only_what_it_declares_whatever_its_options(rule, sample_reports, nsys_runtime_sample):
    """Each option's code path reads through the rule's view of the report, which refuses a
    table or column the rule does not declare (an internal error, exit 3). The rules of tables only
    an Nsight export holds run on a hand-made one (tests/test_nsys_runtimes.py)."""
    command = "analyze" if rule.command == "analyze" else "stats"
    reports = sample_reports[:2] if rule.reports == 2 else sample_reports[:1]
    reports = (nsys_runtime_sample,) if nsys_only(rule) else reports
    for given in variants(rule):
        text = ":".join(k if v is None else f"{k}={v}" for k, v in given.items())
        run = run_cli(command, "-r", f"{rule.name}:{text}" if text else rule.name, "--format", "csv", *reports)
        assert run.code == 0, f"{rule.name} {given}: {run.err}"
        if rule.command == "stats" and rule.reports == 1:  # and on a PyTorch trace, whose tables differ
            run = run_cli(command, "-r", f"{rule.name}:{text}" if text else rule.name, "--format", "csv",
                          sample_reports[2])
            assert run.code in (0, 2) and "does not declare" not in run.err, f"{rule.name} {given}: {run.err}"


@pytest.fixture(scope="module")
def nsys_runtime_sample(tmp_path_factory) -> Path:
    from test_nsys_runtimes import build

    return build(ReportWriter(tmp_path_factory.mktemp("runtimes") / "runtimes.sqlite", NSYS))


@pytest.fixture(scope="module")
def sample_reports() -> tuple[Path, Path, Path]:
    root = Path(__file__).resolve().parents[1]
    sample = root / "examples" / "sample.asysrep"
    return sample, sample, root / "tests" / "fixtures" / "real" / "kineto" / "tracelens_h100_bert.json.gz"
