"""Recording runs: perflab run, runs, show, export."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from perflab.cli.common import (
    COMMAND_LINE,
    LABEL,
    NAME,
    REPETITIONS,
    SECONDS,
    SEED,
    Finite,
    RowId,
    count,
    format_option,
    open_store,
    store_exists,
    terminal_width,
    warn,
    write_output,
)
from perflab.cli.run_options import ShellSpelling, export_options, exports_of, parse_duration, write_exports
from perflab.model.errors import UsageError
from perflab.model.limits import shorten
from perflab.model.run_request import CALL_GRAPHS, PROFILE_FREQ_HZ, PROFILE_FREQ_MAX_HZ, PROFILE_SCOPES
from perflab.render.export import EXPORT_FORMATS

if TYPE_CHECKING:
    from perflab.model.run_request import RunRequest


# -- run ---------------------------------------------------------------------------
def run_limits(repetitions: int | None, min_runs: int | None, max_runs: int | None,
               max_time: str | None) -> tuple[int | None, int, float | None]:
    """-n, -m, -M and --max-time checked together: (repetitions, least rounds, seconds)."""
    if repetitions is not None and max_runs is not None:
        raise UsageError("give -n/--runs or -M/--max-runs, not both")
    for option, value in (("-m/--min-runs", min_runs), ("-M/--max-runs", max_runs)):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be at least 1, got {value}")
    cap = max_runs if max_runs is not None else repetitions
    if min_runs is not None and cap is not None and cap < min_runs:
        raise UsageError(f"-M/--max-runs {cap} is below -m/--min-runs {min_runs}")
    seconds = parse_duration(max_time, "--max-time") if max_time is not None else None
    return cap, min_runs or 1, seconds


class RegistryHelp(click.Option):
    """An option whose help a registry gives when --help is shown, not when the command is
    imported: the registry's modules stay unloaded for `runs` and `show`."""

    def __init__(self, *args: Any, help_from: Callable[[], str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.help_from = help_from

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self.help_from()
        return super().get_help_record(ctx)


def _monitors() -> Any:
    from perflab.execute import monitors
    return monitors


@click.command(cls=ShellSpelling)
@click.option("-n", "-r", "--runs", "repetitions", type=REPETITIONS,
              help="Measured repetitions per point [default: 10, or the suite's].")
@click.option("-w", "--warmup", type=count(least=0), default=0, show_default=True,
              help="Unrecorded runs per point first.")
@click.option("--settle", type=Finite(min=0), metavar="S",
              help="Seconds idle before the first sample; by default as long as perflab's start-up used "
                   "the CPU, at most 1 s.")
@click.option("-c", "--command", "commands", multiple=True, metavar="CMD",
              help="A command line to measure; repeat for several, interleaved in one run.")
@click.option("--command-name", "command_names", multiple=True, metavar="NAME",
              help="Benchmark name of each command, in order (hyperfine's -n/--command-name).")
@click.option("-m", "--min-runs", type=count(), metavar="N", help="With --max-time: rounds before it may stop.")
@click.option("-M", "--max-runs", type=count(), metavar="N", help="Rounds at most (the same as -n).")
@click.option("--max-time", metavar="DURATION", help="Stop at the first round end after this long (30s, 10m).")
@click.option("--label", type=LABEL, help="Name of what is measured (default: the kernel release).")
@click.option("--commit", help="Commit being measured (resolved in --repo if given).")
@click.option("--repo", type=click.Path(file_okay=False), help="Git repository: record its HEAD (or --commit).")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUES",
              help="A sweep: name=a,b,c or name=lo..hi[:step]; repeat for a cartesian product.")
@click.option("-L", "--parameter-list", "lists", nargs=2, multiple=True, metavar="NAME VALUES",
              help="hyperfine's list form: -L name a,b,c.")
@click.option("-P", "--parameter-scan", "scans", nargs=3, multiple=True, metavar="NAME LO HI",
              help="hyperfine's scan form: -P name lo hi (step -D).")
@click.option("-D", "--parameter-step-size", "scan_step", metavar="STEP", help="Step for -P.")
@click.option("--shell", is_flag=True,
              help="Run the command through /bin/sh -c, or --shell=bash through that shell; the shell's "
                   "start-up time is subtracted.")
@click.option("--shell-program", hidden=True)
@click.option("--name", type=NAME, help="Benchmark name to store samples under (default: the command).")
@click.option("--timeout", type=SECONDS, metavar="S", help="Kill the command's process group after S seconds.")
@click.option("-i", "--ignore-failure", is_flag=True, help="Keep non-zero exits as values.")
@click.option("--prepare", metavar="CMD",
              help="Shell line before every sample (not timed): hyperfine's --prepare, same spelling.")
@click.option("--conclude", metavar="CMD",
              help="Shell line after every sample (not timed): hyperfine's --conclude, same spelling.")
@click.option("--setup", metavar="CMD", help="Shell line once per point before its samples.")
@click.option("--cleanup", metavar="CMD", help="Shell line once per point after the run.")
@click.option("--shuffle", is_flag=True, help="Randomise the order inside each round (seed recorded).")
@click.option("--seed", type=SEED, help="Seed for --shuffle (implies it).")
@click.option("--cpu", "cpu_list", metavar="LIST", help="Pin the benchmark to CPUs, e.g. 0 or 0,2-3.")
@click.option("--show-output", is_flag=True, help="Let the command print to the terminal.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary.")
@click.option("--force", is_flag=True, help="Run a sweep of more than 10,000 points.")
@click.option("--duration", type=SECONDS, metavar="S", help="Duration of a built-in workload's sample.")
@click.option("--resume", metavar="RUN", help="Finish an interrupted run (id or label).")
@click.option("--monitor", "monitor_list", metavar="LIST", cls=RegistryHelp,
              help_from=lambda: _monitors().option_help())
@click.option("--events", metavar="LIST", help="perf-stat's events (default: cycles,instructions "
              "where supported, else task-clock,context-switches,cpu-migrations,page-faults).")
@click.option("--profile-freq", type=click.IntRange(1, PROFILE_FREQ_MAX_HZ), metavar="HZ", default=PROFILE_FREQ_HZ,
              show_default=True,
              help="perf-profile sampling frequency (lkp's).")
@click.option("--call-graph", type=click.Choice(CALL_GRAPHS), default=CALL_GRAPHS[0], show_default=True,
              help="perf-profile unwinding: frame pointers (cheap) or dwarf (callers of -O2 code).")
@click.option("--profile-scope", type=click.Choice(PROFILE_SCOPES), default=PROFILE_SCOPES[0],
              show_default=True, help="perf-profile: every CPU, or only the benchmark's processes.")
@export_options
@click.option("--job", "job_id", type=RowId("job id"), hidden=True,
              help="The fleet job this run is for (set by a worker).")
@click.option("--request", "request_file", type=click.Path(dir_okay=False, exists=True), hidden=True,
              help="Record the RunRequest document in FILE (a fleet worker's job).")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, **options: Any) -> None:
    """Run a command, a built-in workload or a suite many times; record every sample.

    Several commands (quoted, or -c each) are benchmarks of one run, alternating inside
    every round (--shuffle randomises each round's order); 'perflab compare RUN' then
    compares them with the first. hyperfine's --prepare is spelled --prepare here.

    \b
      perflab run -n 20 --warmup 2 --label baseline -- ./mytool input.dat
      perflab run -n 30 'sleep 0.010' 'sleep 0.011'
      perflab run -p size=1,2 -c './old {size}' -c './new {size}' --export-json r.json
      perflab run -n 20 -p size=small,large -- ./mytool-new input-{size}.dat
      perflab run hackbench -p groups=1,4,8 -p mode=process,thread -n 10
      perflab run suites/sis.toml
      perflab run wis -p test=poll2 --monitor perf-stat,perf-profile,vmstat
    """
    from perflab.execute import record

    quiet = options["quiet"]
    if options["request_file"]:
        request = _read_request(options["request_file"])
    else:
        request = run_request(options, after_dashdash=ctx.meta.get("perflab.dashdash", False))
    if options["resume"] and request.target is not None and (request.target.words or request.target.commands):
        raise UsageError("--resume takes no command: the run's own is used")
    prepared = None if options["resume"] else record.prepare(request)
    with open_store(ctx, create=True) as store:
        if prepared is None:
            run_id = record.resume(store, store.runs.resolve(options["resume"]), progress_for(quiet), warn)
        else:
            run_id = record.record(store, prepared, progress_for(quiet), warn)
        info = store.runs.resolve(str(run_id))
        if info.request.stopped and not quiet:
            click.echo(f"perflab: stopped after {info.request.stopped.rounds} rounds: "
                       f"{info.request.stopped.reason}", err=True)
        _print_run_summary(store, info, quiet)
        write_exports(store, run_id, request.exports)


def _read_request(path: str) -> RunRequest:
    """--request FILE: a RunRequest document (a fleet worker's job); anything else one line."""
    from perflab.formats.jsontext import parse_json
    from perflab.model.run_request import RunRequest
    try:
        document = parse_json(Path(path).read_bytes().decode("utf-8"), f"--request {path}")
    except UnicodeDecodeError:
        raise UsageError(f"--request {path}: not UTF-8 JSON text") from None
    except OSError as error:
        raise UsageError(f"--request {path}: cannot read it: {error.strerror}") from None
    if not isinstance(document, dict):
        raise UsageError(f"--request {path}: expected a JSON object (a RunRequest), got {type(document).__name__}")
    try:
        return RunRequest.from_json(document)
    except (ValueError, TypeError, KeyError, AttributeError) as error:   # pydantic's ValidationError too
        said = str(error).strip().splitlines()
        raise UsageError(f"--request {path}: not a RunRequest ({said[0] if said else type(error).__name__}"
                         + (f": {said[1].strip()}" if len(said) > 1 else "") + ")") from None


def run_request(options: dict[str, Any], *, after_dashdash: bool) -> RunRequest:
    """`perflab run`'s options as a RunRequest (checked here only as far as the CLI's
    spelling goes; the record service checks the rest before anything runs)."""
    from perflab.execute import monitors
    from perflab.model.run_request import Identity, RunOptions, RunRequest, StopSpec, SweepText, Target

    o = options
    exports = exports_of(o)
    repetitions, least, seconds = run_limits(o["repetitions"], o["min_runs"], o["max_runs"], o["max_time"])
    run_options = RunOptions(
        warmup=o["warmup"], shuffle=o["shuffle"] or o["seed"] is not None, seed=o["seed"],
        cpus=_parse_cpus(o["cpu_list"]) if o["cpu_list"] is not None else None, timeout=o["timeout"],
        prepare=o["prepare"], conclude=o["conclude"],
        setup=o["setup"], cleanup=o["cleanup"], show_output=o["show_output"],
        monitors=list(monitors.parse_names(o["monitor_list"])) if o["monitor_list"] is not None else None,
        events=_event_list(o["events"]) if o["events"] is not None else None, profile_freq=o["profile_freq"],
        call_graph=o["call_graph"], profile_scope=o["profile_scope"], force=o["force"],
        settle=o["settle"])
    target = Target(words=tuple(o["target"]), after_dashdash=after_dashdash, commands=o["commands"],
                    command_names=o["command_names"], name=o["name"],
                    shell=o["shell_program"] or o["shell"] or None, ignore_failure=o["ignore_failure"],
                    duration=o["duration"])
    return RunRequest(
        target=target, sweep=SweepText(params=o["params"], lists=o["lists"], scans=o["scans"], step=o["scan_step"]),
        repetitions=repetitions, options=run_options, limits=StopSpec(max_time_s=seconds, min_rounds=least),
        identity=Identity(label=o["label"], commit=o["commit"], repo=o["repo"], job_id=o["job_id"],
                          command_line=("perflab", *COMMAND_LINE)),
        exports=exports)


def progress_for(quiet: bool) -> Callable[[list], Any]:
    """A live view for several commands, a bar otherwise; the run's size said first when large."""
    from perflab.render import progress

    def choose(plans: list) -> Any:
        if not quiet:
            _announce_size(plans)
        return progress.choose_live(quiet) if len(plans) > 1 else progress.choose(quiet)
    return choose


LONG_RUN_SAMPLES = 1000   # from this many samples on, the size is said before the run starts


def _announce_size(plans) -> None:
    """One line with the run's size before a long run, so a typo in a range shows at once."""
    points = sum(len(p.points) for p in plans)
    samples = sum(len(p.points) * p.options.repetitions for p in plans)
    if samples >= LONG_RUN_SAMPLES:
        repetitions = {p.options.repetitions for p in plans}
        each = (f"{next(iter(repetitions)):,} repetition" + ("s" if repetitions != {1} else "")
                if len(repetitions) == 1 else "their repetitions")
        click.echo(f"perflab: {points:,} points x {each} = {samples:,} samples", err=True)


def _print_run_summary(store, info, quiet: bool) -> None:
    """The primary metric of each benchmark, hyperfine-like, after a run."""
    run_id = info.id
    if not quiet:
        from perflab.analysis.summary import summarize_run
        from perflab.render.runs import render_point_summaries
        from perflab.workloads.registry import from_spec
        workloads = [from_spec(p.workload) for p in info.request.plans]
        primary = {w.benchmark: w.metrics[0].name for w in workloads}
        infos = {(w.benchmark, m.name): m for w in workloads for m in w.metrics}
        summaries = [s for s in summarize_run(store.samples.rows(run_id), infos)
                     if primary.get(s.benchmark) == s.metric]
        click.echo(f"run {run_id} ({info.label}): {info.status.value}; "
                   f"'perflab show {run_id}' has every metric")
        click.echo(render_point_summaries(summaries))
        from perflab.analysis.contention import contention_warnings
        for line in contention_warnings(store, [info]):   # as show and compare say it, wrapped as they are
            click.echo("\n".join(textwrap.wrap(f"warning: {line}", 120, subsequent_indent="  ",
                                                break_long_words=False, break_on_hyphens=False)))
    if info.status.value == "failed":
        raise UsageError(f"every sample of run {run_id} failed; see 'perflab show {run_id}'")


def _event_list(text: str) -> list[str]:
    """``a,b`` -> events; a PMU event keeps its inner commas (``cpu/event=0x3c,umask=0/``)."""
    events: list[str] = []
    for word in text.split(","):
        if events and events[-1].count("/") % 2:
            events[-1] += "," + word
        elif word.strip():
            events.append(word.strip())
    return events


def _parse_cpus(text: str) -> list[int]:
    """--cpu's list (0 or 0,2-3), each number within the machine's CPUs before a range is
    expanded: a typo of 0-99999999 is refused, not built as a list of a hundred million."""
    count = os.cpu_count() or 1
    cpus: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not all(w.isascii() and w.isdigit() for w in ([first, last] if dash else [first])):
            raise UsageError(f"bad --cpu {text!r}: expected a list like 0 or 0,2-3")
        words = (first, last) if dash else (first, first)
        low, high = (int(w) if len(w.lstrip("0")) < 8 else count for w in words)
        if high >= count:
            raise UsageError(f"--cpu {shorten(words[1 if low < count else 0])} is not an online CPU available "
                             f"to perflab (this machine has CPUs 0-{count - 1})")
        if high < low:
            raise UsageError(f"bad --cpu {text!r}: the range {part.strip()!r} descends")
        cpus.extend(range(low, high + 1))
    return cpus


# -- runs / show / export ---------------------------------------------------------------
@click.command()
@click.option("--since", metavar="WHEN", help="Only the runs started since WHEN: a duration back from now "
              "(30m, 12h, 1d, 2w) or an ISO date (2024-01-31).")
@click.pass_context
def runs(ctx: click.Context, since: str | None) -> None:
    """One line per run: id, label, commit, host, when, status, benchmarks, samples.

    \b
      perflab runs --since 1d       the last day's runs
    """
    from perflab.render.runs import render_runs
    if not store_exists(ctx):
        return  # no database yet: no runs, as `ls` of an empty directory (and none created)
    moment = since_moment(since) if since is not None else None
    with open_store(ctx, create=False) as store:
        listing = render_runs(store.runs.all() if moment is None else store.runs.since(moment))
    if listing:
        click.echo(listing)


_SPANS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_moment(text: str) -> float:
    """``--since``: a duration back from now (30m, 12h, 1d, 2w) or an ISO date, as a timestamp."""
    import time

    from perflab.analysis.history import parse_since
    text = text.strip()
    number = text[:-1]
    if text[-1:] in _SPANS and number.replace(".", "", 1).isdigit():
        return time.time() - float(number) * _SPANS[text[-1]]
    try:
        return parse_since(text)
    except UsageError:
        raise UsageError(f"bad --since {text!r}: expected a duration like 12h or 1d, or a date like 2024-01-31") \
            from None


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="Only these metrics (a monitor's too, e.g. outside.cpu_us); repeatable.")
@click.option("--all", "show_all", is_flag=True, help="Every metric, the monitors' and the runner's watch too.")
@click.option("--width", type=click.IntRange(40, 1000), metavar="COLUMNS",
              help="Fit the tables to this many columns (default: 120, or the terminal's when wider).")
@click.pass_context
def show(ctx: click.Context, run_ref: str, metrics: tuple[str, ...], show_all: bool, width: int | None) -> None:
    """A run's environment and, per point, n, mean, median, stddev, min, max, failures."""
    from perflab.analysis.contention import contention_line
    from perflab.analysis.summary import summarize_run
    from perflab.model.records import is_monitor_metric
    from perflab.render.runs import render_show
    with open_store(ctx, create=False) as store:
        info = store.runs.resolve(run_ref)
        rows = store.samples.rows(info.id)
        infos = {(b, m): i for b in set(rows.benchmark) for m, i in store.metrics.infos(b).items()}
        summaries = summarize_run(rows, infos)
        shown = [s for s in summaries if s.metric in metrics] if metrics else \
            summaries if show_all else [s for s in summaries if not is_monitor_metric(s.metric)]
        if metrics and not shown:
            raise UsageError(f"run {info.id} has no metric {', '.join(metrics)}",
                             hint="'perflab show RUN --all' lists every metric")
        notes = [contention_line(store, info)]
        hidden = sorted({s.metric.split(".")[0] + ".*" for s in summaries if s not in shown})
        if hidden and not metrics:
            notes.append(f"not shown: {', '.join(hidden)} (the monitors' and the runner's watch): "
                         "--all shows them, --metric NAME one")
        click.echo(render_show(info, shown, notes, width or terminal_width()))


@click.command()
@click.argument("run_ref", metavar="RUN")
@format_option(EXPORT_FORMATS)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to a file.")
@click.pass_context
def export(ctx: click.Context, run_ref: str, fmt: str, output: str | None) -> None:
    """A run's raw samples, one row per value."""
    with open_store(ctx, create=False) as store:
        info = store.runs.resolve(run_ref)
        text = EXPORT_FORMATS[fmt].render(info, store.samples.rows(info.id))
    if output:
        write_output(output, text)
    else:
        click.echo(text, nl=False)


COMMANDS: list[click.Command] = [run, runs, show, export]
