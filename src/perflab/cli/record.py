"""Recording runs: perflab run, runs, show, export."""

from __future__ import annotations

import os

import click

from perflab.cli.common import COMMAND_LINE, check_output, open_store, warn, write_output
from perflab.model.errors import UsageError


# -- run ---------------------------------------------------------------------------
class ShellSpelling(click.Command):
    """Remembers whether ``--`` was given: words after it are a command, never a workload.
    ``--shell=SHELL`` (hyperfine's spelling) names the shell; ``--shell`` alone stays a flag,
    so ``--shell 'make -j4'`` keeps its command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.dashdash"] = "--" in args
        end = args.index("--") if "--" in args else len(args)
        words: list[str] = []
        for word in args[:end]:
            if word.startswith("--shell="):
                words += ["--shell-program", word.removeprefix("--shell=")]
            else:
                words.append(word)
        return super().parse_args(ctx, words + args[end:])


def parse_duration(text: str, option: str) -> float:
    """``90``, ``30s``, ``10m``, ``1h`` -> seconds."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise UsageError(f"bad {option} {text!r}: expected a duration like 30s, 10m or 1h") from None
    if not 0 < value < float("inf"):
        raise UsageError(f"{option} must be positive, got {text}")
    return value


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


def export_options(function):
    for flag, what in (("--export-markdown", "hyperfine's markdown table (with its Relative column)"),
                       ("--export-csv", "hyperfine's CSV summary"),
                       ("--export-json", "hyperfine's JSON (same keys: hyperfine's scripts read it)")):
        function = click.option(flag, metavar="FILE", type=click.Path(dir_okay=False),
                                help=f"After the run, write {what}.")(function)
    return function


def write_exports(store, run_id: int, exports: dict[str, str | None]) -> None:
    """The --export-* files of a finished run."""
    if not any(exports.values()):
        return
    from perflab.analysis.hyperfine_export import hyperfine_results
    from perflab.render.hyperfine_export import FORMATS
    results = hyperfine_results(store, store.resolve_run(str(run_id)))
    for fmt, path in exports.items():
        if path:
            write_output(path, FORMATS[fmt](results))


def check_exports(exports: dict[str, str | None]) -> None:
    for path in exports.values():
        if path:
            check_output(path)


@click.command(cls=ShellSpelling)
@click.option("-n", "-r", "--runs", "repetitions", type=int,
              help="Measured repetitions per point [default: 10, or the suite's].")
@click.option("-w", "--warmup", type=int, default=0, show_default=True, help="Unrecorded runs per point first.")
@click.option("-c", "--command", "commands", multiple=True, metavar="CMD",
              help="A command line to measure; repeat for several, interleaved in one run.")
@click.option("--command-name", "command_names", multiple=True, metavar="NAME",
              help="Benchmark name of each command, in order (hyperfine's -n/--command-name).")
@click.option("-m", "--min-runs", type=int, metavar="N", help="With --max-time: rounds before it may stop.")
@click.option("-M", "--max-runs", type=int, metavar="N", help="Rounds at most (the same as -n).")
@click.option("--max-time", metavar="DURATION", help="Stop at the first round end after this long (30s, 10m).")
@click.option("--label", help="Name of what is measured (default: the kernel release).")
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
@click.option("--name", help="Benchmark name to store samples under (default: the command).")
@click.option("--timeout", type=float, metavar="S", help="Kill the command's process group after S seconds.")
@click.option("-i", "--ignore-failure", is_flag=True, help="Keep non-zero exits as values.")
@click.option("--prepare", metavar="CMD",
              help="Shell line before every sample (not timed): hyperfine's --prepare, same spelling.")
@click.option("--setup", metavar="CMD", help="Shell line once per point before its samples.")
@click.option("--cleanup", metavar="CMD", help="Shell line once per point after the run.")
@click.option("--shuffle", is_flag=True, help="Randomise the order inside each round (seed recorded).")
@click.option("--seed", type=int, help="Seed for --shuffle (implies it).")
@click.option("--cpu", "cpu_list", metavar="LIST", help="Pin the benchmark to CPUs, e.g. 0 or 0,2-3.")
@click.option("--show-output", is_flag=True, help="Let the command print to the terminal.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary.")
@click.option("--force", is_flag=True, help="Run a sweep of more than 10,000 points.")
@click.option("--duration", type=float, metavar="S", help="Duration of a built-in workload's sample.")
@click.option("--resume", metavar="RUN", help="Finish an interrupted run (id or label).")
@click.option("--monitor", "monitor_list", metavar="LIST",
              help="Watch each sample: perf-stat,perf-profile,vmstat,proc-stat,schedstat,interrupts,rusage.")
@click.option("--events", metavar="LIST", help="perf-stat's events (default: cycles,instructions "
              "where supported, else task-clock,context-switches,cpu-migrations,page-faults).")
@click.option("--profile-freq", type=int, metavar="HZ", default=800, show_default=True,
              help="perf-profile sampling frequency (lkp's).")
@click.option("--call-graph", type=click.Choice(["fp", "dwarf"]), default="fp", show_default=True,
              help="perf-profile unwinding: frame pointers (cheap) or dwarf (callers of -O2 code).")
@click.option("--profile-scope", type=click.Choice(["system", "process"]), default="system",
              show_default=True, help="perf-profile: every CPU, or only the benchmark's processes.")
@export_options
@click.option("--job", "job_id", type=int, hidden=True, help="The fleet job this run is for (set by a worker).")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, repetitions: int | None, warmup: int, commands: tuple[str, ...],
        command_names: tuple[str, ...], min_runs: int | None, max_runs: int | None, max_time: str | None,
        label: str | None, commit: str | None,
        repo: str | None, params: tuple[str, ...], lists: tuple, scans: tuple, scan_step: str | None,
        shell: bool, shell_program: str | None, name: str | None, timeout: float | None, ignore_failure: bool,
        prepare: str | None, setup: str | None, cleanup: str | None, shuffle: bool,
        seed: int | None, cpu_list: str | None, show_output: bool, quiet: bool, force: bool,
        duration: float | None, resume: str | None, monitor_list: str | None, events: str | None,
        profile_freq: int, call_graph: str, profile_scope: str, export_json: str | None,
        export_csv: str | None, export_markdown: str | None, job_id: int | None,
        target: tuple[str, ...]) -> None:
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
    from perflab.execute import identity, monitors
    from perflab.execute.runner import Runner, RunOptions, StopLimits, plans_from_spec
    from perflab.execute.targets import CommandChoices, plans_for
    from perflab.model import params as sweeps
    from perflab.render import progress
    from perflab.workloads.suite import machine_variables

    exports = {"json": export_json, "csv": export_csv, "markdown": export_markdown}
    check_exports(exports)
    repetitions, least, seconds = run_limits(repetitions, min_runs, max_runs, max_time)
    if resume:
        if target or commands:
            raise UsageError("--resume takes no command: the run's own is used")
        with open_store(ctx, create=True) as store:
            info = store.resolve_run(resume)
            plans = plans_from_spec(info.spec)
            limits = stop_limits_of(info.spec)
            runner = Runner(store, plans, progress.choose(quiet), warn, stop=limits)
            run_id = runner.resume(info)
            if "ab" in info.spec:   # an A/B's decision, as `perflab ab` would have stored it
                from perflab.analysis.ab import AbRule, conclude
                from perflab.cli.ab import ordered_samples
                assert isinstance(limits.rule, AbRule)
                conclude(store, run_id, limits.rule, ordered_samples(runner))
            _print_run_summary(store, run_id, plans, quiet)
            write_exports(store, run_id, exports)
        return

    variables = machine_variables()
    assignments = [sweeps.parse_assignment(p, variables) for p in params]
    assignments += [sweeps.parse_hyperfine_list(n, v) for n, v in lists]
    assignments += [sweeps.parse_hyperfine_scan(n, lo, hi, scan_step) for n, lo, hi in scans]
    if scan_step and not scans:
        raise UsageError("-D/--parameter-step-size needs -P")
    sweep = sweeps.merge(assignments)
    cpus = _parse_cpus(cpu_list) if cpu_list else None
    options = RunOptions(warmup=warmup, shuffle=shuffle or seed is not None,
                         seed=seed, cpus=cpus, timeout=timeout, prepare=prepare, setup=setup,
                         cleanup=cleanup, show_output=show_output,
                         monitors=list(monitors.parse_names(monitor_list)) if monitor_list else None,
                         events=_event_list(events) if events is not None else None,
                         profile_freq=profile_freq, call_graph=call_graph, profile_scope=profile_scope,
                         force=force)
    plans = plans_for(list(target), after_dashdash=ctx.meta.get("perflab.dashdash", False),
                      sweep=sweep, options=options,
                      command=CommandChoices(shell_program or shell, name, ignore_failure,
                                             commands, command_names),
                      repetitions=repetitions, duration=duration)
    for run_plan in plans:
        said = getattr(run_plan.workload, "syntax_warning", lambda: None)()
        if said:
            warn(said)
    if not quiet:
        _announce_size(plans)
    sha = describe = None
    if repo:
        sha, describe = identity.git_commit(repo, commit)
    elif commit:
        sha = commit
    with open_store(ctx, create=True) as store:
        limits = StopLimits(max_time_s=seconds, min_rounds=least)
        runner = Runner(store, plans, progress.choose_live(quiet) if len(plans) > 1 else progress.choose(quiet),
                        warn, stop=limits)
        run_id = runner.start(label=label or identity.default_label(), commit=sha,
                              describe=describe, repo=os.path.abspath(repo) if repo else None,
                              command_line=["perflab", *COMMAND_LINE], job_id=job_id,
                              extra_spec={"limits": {"max_time_s": seconds, "min_rounds": least}})
        if runner.stopped and not quiet:
            click.echo(f"perflab: stopped after {runner.stopped['rounds']} rounds: {runner.stopped['reason']}",
                       err=True)
        _print_run_summary(store, run_id, plans, quiet)
        write_exports(store, run_id, exports)


def stop_limits_of(spec: dict):
    """The stop limits a run recorded, for --resume (an A/B's rule is rebuilt from its spec)."""
    from perflab.execute.runner import StopLimits
    if "ab" in spec:
        from perflab.analysis.ab import ab_limits
        return ab_limits(spec["ab"]["settings"])[0]
    limits = spec.get("limits") or {}
    return StopLimits(max_time_s=limits.get("max_time_s"), min_rounds=limits.get("min_rounds", 1))


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


def _print_run_summary(store, run_id: int, plans, quiet: bool) -> None:
    """The primary metric of each benchmark, hyperfine-like, after a run."""
    info = store.resolve_run(str(run_id))
    if not quiet:
        from perflab.analysis.summary import summarize_run
        from perflab.render.runs import render_point_summaries
        primary = {p.workload.benchmark: p.workload.metrics[0].name for p in plans}
        infos = {(p.workload.benchmark, m.name): m for p in plans for m in p.workload.metrics}
        summaries = [s for s in summarize_run(store.sample_rows(run_id), infos)
                     if primary.get(s.benchmark) == s.metric]
        click.echo(f"run {run_id} ({info.label}): {info.status.value}; "
                   f"'perflab show {run_id}' has every metric")
        click.echo(render_point_summaries(summaries))
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
    from perflab.execute.environment import parse_cpu_list
    try:
        cpus = parse_cpu_list(text)
    except ValueError:
        cpus = []
    if not cpus:
        raise UsageError(f"bad --cpu {text!r}: expected a list like 0 or 0,2-3")
    return cpus




# -- runs / show / export ---------------------------------------------------------------
@click.command()
@click.pass_context
def runs(ctx: click.Context) -> None:
    """One line per run: id, label, commit, host, when, status, benchmarks, samples."""
    from perflab.render.runs import render_runs
    from perflab.store import location
    target = location.resolve(ctx.find_root().obj["db"])
    if not location.is_url(target) and not os.path.lexists(os.path.expanduser(target)):
        return  # no database yet: no runs, as `ls` of an empty directory (and none created)
    with open_store(ctx, create=False) as store:
        listing = render_runs(store.list_runs())
    if listing:
        click.echo(listing)


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.pass_context
def show(ctx: click.Context, run_ref: str) -> None:
    """A run's environment and, per point, n, mean, median, stddev, min, max, failures."""
    from perflab.analysis.contention import contention_warnings
    from perflab.analysis.summary import summarize_run
    from perflab.render.runs import render_show
    with open_store(ctx, create=False) as store:
        info = store.resolve_run(run_ref)
        rows = store.sample_rows(info.id)
        infos = {(b, m): i for b in set(rows.benchmark) for m, i in store.metric_infos(b).items()}
        click.echo(render_show(info, summarize_run(rows, infos), contention_warnings(store, [info])))


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to a file.")
@click.pass_context
def export(ctx: click.Context, run_ref: str, fmt: str, output: str | None) -> None:
    """A run's raw samples, one row per value."""
    from perflab.render.export import export_csv, export_json
    with open_store(ctx, create=False) as store:
        info = store.resolve_run(run_ref)
        text = (export_json if fmt == "json" else export_csv)(info, store.sample_rows(info.id))
    if output:
        write_output(output, text)
    else:
        click.echo(text, nl=False)


COMMANDS: list[click.Command] = [run, runs, show, export]
