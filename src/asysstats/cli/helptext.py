"""Help generated from the rule declarations (``--help-report``, ``--help-reports``, docs/rules.md)."""

from __future__ import annotations

from asysstats.analysis.declarations import Option, Rule
from asysstats.core.result import ASYS, NSYS_STATS
from asysstats.rulebook import Registry

VALUE_HINT = {"int": "<n>", "decimal": "<x>", "int_list": "<id/id/...>",
              "regex": "<regex>", "regex_list": "<regex/regex/...>",
              "str_list": "<a/b/...>", "text": "<value>"}


def option_usage(option: Option) -> str:
    if option.kind == "flag":
        return option.name
    if option.kind == "choice":
        return f"{option.name}=<{'|'.join(option.choices)}>"
    return f"{option.name}={VALUE_HINT.get(option.kind, '<value>')}"


def rule_help(rule: Rule) -> str:
    lines = [f"{rule.name} -- {rule.title}", "", "    Options:"]
    for option in rule.all_options:
        lines.append(f"        {option_usage(option)}")
        default = "" if option.default in (None, False) else f" Default is '{option.default}'."
        lines.append(f"            {option.help}{default}")
    lines += ["        Use --filter-time / --filter-hgtx to specify the report time range.", "", "    Output:"]
    if rule.numbered:
        lines.append("        Row# : Row number")
    lines += [f"        {c.name} : {c.help}" for c in rule.columns]
    lines += ["", f"    {rule.help}", ""]
    return "\n".join(lines)


# The heading of each family; {tool}: the nsys command an nsys rule of this command mirrors (stats, analyze).
FAMILIES = {ASYS: "The asys reports (the asys reference's names, columns and formats):",
            NSYS_STATS: "The nsys {tool} reports (NVIDIA's names, columns and formats, as `nsys {tool}` prints them):"}


def rules_list(registry: Registry, command: str) -> str:
    """The rules of a command by family, each family under a line saying which tool it mirrors."""
    rules = command_rules(registry, command)
    width = max((len(r.name) for r in rules), default=0)
    blocks = []
    for family, heading in FAMILIES.items():
        members = [r for r in rules if r.mirrors == family]
        if members:
            lines = [f"    {r.name.ljust(width)}  {r.title}" for r in members]
            heading = heading.format(tool="analyze" if command == "analyze" else "stats")
            blocks.append("\n".join(([heading] if len({r.mirrors for r in rules}) > 1 else []) + lines))
    return "\n\n".join(blocks) + "\n"


def command_rules(registry: Registry, command: str) -> list[Rule]:
    """The rules of ``asys analyze`` (``command`` "analyze") or of ``asys stats`` (any other)."""
    return [r for r in registry if (r.command == "analyze") == (command == "analyze")]


def all_rules_help(registry: Registry, command: str) -> str:
    """``--help-reports ALL``: the help of every rule of the command, one after another."""
    return "\n".join(rule_help(rule) for rule in command_rules(registry, command))


def rules_markdown(registry: Registry) -> str:
    """docs/rules.md: the text of ``asys stats --help-reports ALL`` then of ``asys analyze
    --help-rules ALL``, a section per rule."""
    parts = ["# Rules\n", "Generated from the rule declarations: each section is a rule's part of "
             "`asys stats --help-reports ALL` (then of `asys analyze --help-rules ALL`); a test keeps this file "
             "in step with the code (`python -m asysstats.cli.helptext > docs/rules.md`).\n"]
    for command in ("stats", "analyze"):
        parts += [f"## {rule.name}\n\n```\n{rule_help(rule)}```\n" for rule in command_rules(registry, command)]
    return "\n".join(parts)


if __name__ == "__main__":  # python -m asysstats.cli.helptext > docs/rules.md
    from asysstats.rulebook import REGISTRY

    print(rules_markdown(REGISTRY), end="")
