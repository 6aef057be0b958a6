"""The ``asys`` command line: ``stats``, ``analyze``, ``compare`` and ``sample``, a client of the
public API (:mod:`asysstats.api`)."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from types import FrameType
from typing import Sequence

import click

from asysstats.api.reports import TS_SHIFT_MAX
from asysstats.cli.arguments import Integer, RuleRequest, bool_value, parse_rule_args, settings_from
from asysstats.cli.runs import ManyOptions, run_requests
from asysstats.core.errors import AsysError, OutputClosed, escaped_control
from asysstats.core.files import put_off, stop_signals_held
from asysstats.reading.opening import expand_reports
from asysstats.rulebook import CHECK_RULE, DEFAULT_ANALYZE, DEFAULT_STATS, REGISTRY

FORMATS_HELP = """The following output formats are available (--format NAME[:ratio=.N%][,NAME...]):

    column  aligned, human-readable table (the console default, and of @command)
    csv     comma-separated values, text quoted, each line ending with ',' (the file default: -o . or <dir>/<prefix>)
    json    a list of row objects with typed values (null for '-'); several results to the console:
            one object of those lists, each under its rule's name (as its file would be named)
    xlsx    spreadsheet, one sheet per rule, typed cells, a chart of the share column;
            -o <dir>/<name>.xlsx puts every rule of the run in that one workbook
    py      the generated script of ppu_op_unit_test
    tsv     tab-separated values, of the rules that mirror nsys stats (cuda_gpu_kern_sum, ...)

    A rule that mirrors an nsys stats report writes csv, tsv, column and json as nsys stats does:
    no Row#, no trailing comma, text quoted only where it holds a comma, quote or line break.

    ratio=.N%  decimals of percentage columns: %, .1% (default), .2% or .3%
"""


def help_requested(command: str, help_reports: str | None, help_report: str | None) -> bool:
    """Print the help of a rule, of every rule (``ALL``) or the list of rules (no value) when
    asked for; whether it was."""
    if help_report is None and help_reports is None:
        return False
    from asysstats.cli.helptext import all_rules_help, rule_help, rules_list  # for help only: start-up time

    if help_report is not None:
        click.echo(rule_help(REGISTRY.get(help_report, command)))
    elif not help_reports:
        click.echo(f"The following built-in rules are available:\n\n{rules_list(REGISTRY, command)}")
    elif help_reports.upper() == "ALL":
        click.echo(all_rules_help(REGISTRY, command), nl=False)
    else:
        click.echo(rule_help(REGISTRY.get(help_reports, command)))
    return True


def common_options(func):
    decorators = [
        click.argument("reports", nargs=-1, type=click.Path(dir_okay=True, path_type=str)),
        click.option("--format", "formats", multiple=True,
                     help="column|csv|json|xlsx[:ratio=.N%] or py (a script rule), repeated or a comma list, by "
                          "position (default: csv to files, column to the console and @command)."),
        click.option("-o", "--output", "outputs", multiple=True,
                     help="%, @command, '.', or <dir>/<prefix>, repeated or a comma list (an @command takes the rest "
                          "of its value; a ',' in a path: '\\,'), by position. Files: <prefix>_<rule>.<format>; with "
                          "several reports <prefix>_<report>_<rule>.<format> (<report>: its stem, after its folders "
                          "when stems repeat, e.g. rank0_report); a rule asked for twice to one output: "
                          "<rule>_<n>, its n-th request."),
        click.option("-f", "--force-overwrite", "force", default="false", metavar="true|false",
                     help="Overwrite existing output files."),
        click.option("--filter-time", help="<start>/<end> in ns from the start of capture."),
        click.option("--filter-hgtx", help="<range>[@<domain>][/<index>]: analyse inside that HGTX range."),
        click.option("--filter-nvtx", help="<range>[@<domain>][/<index>[/<count>]]: nsys's name of --filter-hgtx; "
                     "with count, from the index-th range's start to the end of the count-th from it."),
        click.option("--timeunit", metavar="UNIT", help="Times of NVIDIA's report names in nsec (default), usec, "
                     "msec or seconds (a prefix naming one unit will do), as nsys stats --timeunit."),
        click.option("--callstack-group-config", "callstack", multiple=True, help="group=frame_re/frame_re/..."),
        click.option("--ppu-op-config", "opconfig", multiple=True, help="Type=kernel:<re> or Type=hgtx:<re>."),
        click.option("--kernel-group-config", "kernel_groups", multiple=True, help="name=regex, or @file."),
        click.option("--help-reports", "--help-rules", "help_reports", is_flag=False, flag_value="", default=None,
                     metavar="[ALL|name]", help="List the rules; ALL: every rule's help; name: one rule's help."),
        click.option("--help-formats", is_flag=False, flag_value="ALL", default=None, metavar="[ALL]",
                     help="List the output formats and their options."),
        click.option("--help-report", metavar="name", help="Show one rule's options and output columns."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the columnar cache."),
        click.option("--device-spec", metavar="FILE", help="JSON peak figures of devices for the operator "
                     "utilisations (see docs/operators.md)."),
        click.option("--keep-suspect-events", is_flag=True,
                     help="Keep events with end < start or longer than the capture (left out by default)."),
        click.option("--merge-reports", is_flag=True, help="Compute the rules over the union of the reports "
                     "(per-rank reports of one job; runs on Dask, see docs/many-reports.md)."),
        click.option("--ts-normalize", default="false", metavar="true|false",
                     help="Timestamps as UTC wall-clock ns (aligns the clocks of several reports)."),
        click.option("--ts-shift", multiple=True, type=Integer(-TS_SHIFT_MAX, TS_SHIFT_MAX), metavar="NS",
                     help="Add NS to the report's timestamps, by position (repeat per report)."),
        click.option("--scheduler", metavar="tcp://HOST:PORT",
                     help="Dask scheduler of --merge-reports (default: a local cluster sized to the machine)."),
        click.option("--skip-bad-reports", is_flag=True, help="Leave out (and name) reports that cannot be read."),
        click.option("--debug", is_flag=True, help="Show a traceback on errors."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def execute(command: str, rule_args, reports, formats, outputs, force, filter_time, filter_hgtx, callstack,
            opconfig, kernel_groups, help_reports, help_report, help_formats, no_cache, keep_suspect_events, check=False,
            device_spec=None, merge_reports=False, ts_normalize="false", ts_shift=(), scheduler=None,
            skip_bad_reports=False, filter_nvtx=None, timeunit=None) -> None:
    if help_formats:
        click.echo(FORMATS_HELP)
        return
    if help_requested(command, help_reports, help_report):
        return
    if not reports:
        raise AsysError(f"asys {command}: no report given")
    requests = parse_rule_args(rule_args)
    default_set = not requests and not check
    if default_set:
        requests = [RuleRequest(name) for name in DEFAULT_STATS if name in REGISTRY]
    if check:
        requests.insert(0, RuleRequest(CHECK_RULE))
    settings = settings_from(filter_time, filter_hgtx, callstack, opconfig, kernel_groups, keep_suspect_events,
                             device_spec, filter_nvtx)
    many = ManyOptions(merge_reports, bool_value(ts_normalize, "--ts-normalize"), tuple(ts_shift), scheduler,
                       skip_bad_reports)
    rerun = [*(("--filter-time", filter_time) if filter_time else ()),
             *(("--filter-hgtx", filter_hgtx) if filter_hgtx else ()),
             *(("--filter-nvtx", filter_nvtx) if filter_nvtx else ()),
             *(("--keep-suspect-events",) if keep_suspect_events else ())]  # what changes the rows of the default set
    with capped_cache(not no_cache):
        run_requests(command, expand_reports(reports), requests, formats, outputs,
                     bool_value(force, "--force-overwrite"), settings, default_set, cache=not no_cache, many=many,
                     rerun=rerun, timeunit=timeunit)


@contextlib.contextmanager
def capped_cache(enabled: bool):
    """A run that uses the columnar cache: a bad ``ASYSSTATS_CACHE_MAX`` stops it before it
    starts; after it, if it stored columns, the entries used longest ago go until the cache is
    within its cap (those it stored in stay)."""
    if not enabled:
        yield
        return
    from asysstats.reading.cache import cache_limit, recording_writes

    limit = cache_limit()
    with recording_writes() as written:
        yield
    if written.folders:
        from asysstats.reading.cache_folder import trim_after_writes  # after runs that stored columns only

        trim_after_writes(limit, written.size, frozenset(written.folders))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="asysstats", prog_name="asys", message="%(prog)s %(version)s")
def asys() -> None:
    """Statistics and expert-system reports over asysrep and Nsight Systems SQLite reports."""


@asys.command("stats")
@click.option("-r", "--report", "rule_args", multiple=True, help="Rules: name[:opt=val[:flag]][,name...].")
@click.option("--check", is_flag=True, help="Print the report's data-quality problems (a table; before any -r rules).")
@common_options
def stats_command(rule_args, **kwargs) -> None:
    """Run statistics rules on REPORTS (two reports for the comparison rules)."""
    kwargs.pop("debug")
    execute("stats", rule_args, **kwargs)


@asys.command("analyze")
@click.option("-r", "--rule", "rule_args", multiple=True, help="Rules: ppu_gaps[:gap=<ms>], ppu_time_util, ...")
@common_options
def analyze_command(rule_args, **kwargs) -> None:
    """Run the expert rules (ppu_gaps, ppu_time_util) on REPORTS."""
    kwargs.pop("debug")
    if kwargs.get("reports") and not rule_args:
        rule_args = DEFAULT_ANALYZE
    execute("analyze", rule_args, **kwargs)


@asys.command("compare")
@click.argument("base")
@click.argument("target")
@click.option("-o", "--output", help="<dir>/<prefix>: files <prefix>_<rule>.csv (default: <base>_vs_<target>, "
              "the reports' stems, after their folders when the stems are the same).")
@click.option("-f", "--force-overwrite", "force", default="false", metavar="true|false",
              help="Overwrite existing output files.")
@click.option("--filter-hgtx", help="<range>[@<domain>][/<index>]: compare inside that HGTX range of each report.")
@click.option("--ppu-op-config", "opconfig", multiple=True, help="Type=kernel:<re> or Type=hgtx:<re>.")
@click.option("--fail-if-slower", type=click.FloatRange(min=0), metavar="PERCENT",
              help="Exit 1 when the target's total time exceeds the base's by more than PERCENT.")
@click.option("--fail-on", default="ppu_kernel_summary_compare", metavar="RULE",
              help="The comparison whose total --fail-if-slower checks (default: ppu_kernel_summary_compare).")
@click.option("--device-spec", metavar="FILE", help="JSON peak figures of devices (see docs/operators.md).")
@click.option("--linked-only", is_flag=True, help="Compare only the GPU work whose launching API call is in the "
              "report (leave out work launched before the profiling window).")
@click.option("--pair-devices", multiple=True, metavar="BASE=TARGET",
              help="Pair base device BASE with target device TARGET (ids; repeat or comma-separate for more). "
                   "Default: by id, else by order.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the columnar cache.")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def compare_command(base, target, output, force, filter_hgtx, opconfig, fail_if_slower, fail_on, device_spec,
                    linked_only, pair_devices, no_cache, debug) -> None:
    """Compare TARGET with BASE: the default comparison set, a console summary and CSV files."""
    from asysstats.cli.compare import run_compare

    settings = settings_from(None, filter_hgtx, (), opconfig, (), device_spec=device_spec)
    settings["linked_only"] = linked_only
    with capped_cache(not no_cache):
        text, status = run_compare(base, target, output, bool_value(force, "--force-overwrite"), settings,
                                   fail_if_slower, fail_on, cache=not no_cache, pair_devices=",".join(pair_devices))
    click.echo(text, nl=False)
    if status:
        sys.exit(status)


@asys.command("cache")
@click.option("--clear", is_flag=True, help="Remove the cache folder and everything in it.")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def cache_command(clear: bool, debug: bool) -> None:
    """Show the columnar cache (its folder, size, cap and the report of each entry), or clear it."""
    from asysstats.cli.cachetext import cache_text, clear_text

    click.echo(clear_text() if clear else cache_text(), nl=False)


@asys.command("sample")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--scale", default="1", metavar="N",
              help="Multiply the number of steps (events), up to 10,000; about 0.9 MB of report each.")
@click.option("--seed", default=7, type=int, help="Random seed.")
@click.option("-f", "--force-overwrite", "force", default="false", metavar="true|false")
@click.option("--debug", is_flag=True)
def sample_command(out: Path, scale: str, seed: int, force: str, debug: bool) -> None:
    """Write a synthetic asysrep of an LLM inference step on 4 PPUs to OUT."""
    from asysstats.core.integers import parse_int
    from asysstats.synth import MAX_SCALE  # imported by this command only, as the generator is
    from asysstats.synth.generator import write_sample

    write_sample(out, scale=parse_int(scale, "--scale", 1, MAX_SCALE), seed=seed,
                 force=bool_value(force, "--force-overwrite"))


def one_line(message: str) -> str:
    """Error messages quote user text; its control characters neither break the line nor reach the
    terminal as commands (docs/decisions.md D17)."""
    return escaped_control(message)


# The cyclic garbage collector, at its default thresholds, rescans the growing heap every 700
# allocations: 40 % of the time of rules that build a Python object per distinct text (operator
# annotations). Our objects rarely form cycles, so it runs a hundred times less often.
GC_THRESHOLDS = (70_000, 20, 20)


# SIGTERM and SIGHUP (`timeout`, a CI job cancelled, a terminal closed) stop a run as Ctrl-C
# does: unwinding, so that no temporary file or private copy is left (exit 128 + the signal).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
IMPORT_RETRY_S = 0.01


class Stopped(SystemExit):
    """A stop signal, raised in the main thread: it unwinds the run as ``sys.exit`` does (every
    ``finally`` and exit handler runs), past handlers of ``Exception`` and ``KeyboardInterrupt``."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def stop(signum: int, frame: FrameType | None) -> None:
    """The handler of :data:`STOP_SIGNALS`: the first stops the run; those that follow are
    ignored, so that they do not interrupt its clean-up. CPython loses an exception raised
    while it compiles code (an import with no bytecode cache, a dataclass made: one time in
    three): during an import the signal is raised again a moment later instead. Within
    :func:`~asysstats.core.files.stop_signals_held` it waits for the hold's end."""
    if put_off(signum):
        return
    if importing(frame):
        later = threading.Timer(IMPORT_RETRY_S, signal.raise_signal, (signum,))
        later.daemon = True
        later.start()
        return
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    raise Stopped(signum)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler of SIGINT: Python's (KeyboardInterrupt), put off within
    :func:`~asysstats.core.files.stop_signals_held` as the other stop signals are."""
    if not put_off(signum):
        signal.default_int_handler(signum, frame)


def importing(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def stop_signals_unwind():
    """Within: :data:`STOP_SIGNALS` stop the run (:func:`stop`), and a file grown past the size
    limit (``ulimit -f``) is an error (EFBIG) rather than a SIGXFSZ that kills the process.
    Signal handlers belong to the main thread: elsewhere (in-process callers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {each: signal.signal(each, stop) for each in STOP_SIGNALS}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the shell ignores it
        handlers[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    handlers[signal.SIGXFSZ] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    settle_temp_folder()
    try:
        yield
    finally:
        for each, handler in handlers.items():
            signal.signal(each, handler)


def settle_temp_folder() -> None:
    """Find the temp folder now, with the stop signals held: Python finds it by creating and
    removing a probe file there (:func:`tempfile.gettempdir`), which a signal landing in
    between would leave behind."""
    with stop_signals_held():
        tempfile.gettempdir()


def main(argv: Sequence[str] | None = None) -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        with stop_signals_unwind():
            asys.main(args=args, prog_name="asys", standalone_mode=False)
            sys.stdout.flush()  # a closed pipe surfaces here, inside the handler below
    except Stopped as exc:
        with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
            click.echo(f"aborted ({signal.Signals(exc.signum).name})", err=True)
        raise
    except AsysError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {one_line(str(exc))}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"error: {one_line(exc.format_message())}", err=True)
        sys.exit(2)
    except (BrokenPipeError, OutputClosed):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # an unexpected failure is still one line unless --debug
        if debug:
            traceback.print_exc()
        click.echo(f"error: internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with --debug)", err=True)
        sys.exit(3)


def entry() -> None:
    """The ``asys`` console script and ``python -m asysstats``: :func:`main`, then leave without
    tearing the interpreter down. Freeing every module, array and mapping one by one took
    0.1-0.2 s, a fifth of a warm summary; exit handlers still run and the streams are flushed."""
    code: str | int | None
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):  # as the interpreter reports sys.exit(None) and sys.exit("text")
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    for each in STOP_SIGNALS:  # the run is over: a stop signal must not cut its clean-up short
        signal.signal(each, signal.SIG_IGN)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: main has already handled it
            pass
    os._exit(code)
