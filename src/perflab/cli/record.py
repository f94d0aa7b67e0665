"""Recording runs: perflab run, runs, show, export."""

from __future__ import annotations

import os

import click

from perflab.cli.common import COMMAND_LINE, open_store, warn, write_output
from perflab.model.errors import UsageError


# -- run ---------------------------------------------------------------------------
class _RunCommand(click.Command):
    """Remembers whether ``--`` was given: words after it are a command, never a workload."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.dashdash"] = "--" in args
        return super().parse_args(ctx, args)


@click.command(cls=_RunCommand)
@click.option("-n", "--runs", "repetitions", type=int,
              help="Measured repetitions per point [default: 10, or the suite's].")
@click.option("--warmup", type=int, default=0, show_default=True, help="Unrecorded runs per point first.")
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
@click.option("--shell", is_flag=True, help="Run the command through /bin/sh -c; its start-up time is subtracted.")
@click.option("--name", help="Benchmark name to store samples under (default: the command).")
@click.option("--timeout", type=float, metavar="S", help="Kill the command's process group after S seconds.")
@click.option("-i", "--ignore-failure", is_flag=True, help="Keep non-zero exits as values.")
@click.option("--prepare", metavar="CMD", help="Shell line before every sample (not timed).")
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
@click.option("--job", "job_id", type=int, hidden=True, help="The fleet job this run is for (set by a worker).")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, repetitions: int | None, warmup: int, label: str | None, commit: str | None,
        repo: str | None, params: tuple[str, ...], lists: tuple, scans: tuple, scan_step: str | None,
        shell: bool, name: str | None, timeout: float | None, ignore_failure: bool,
        prepare: str | None, setup: str | None, cleanup: str | None, shuffle: bool,
        seed: int | None, cpu_list: str | None, show_output: bool, quiet: bool, force: bool,
        duration: float | None, resume: str | None, monitor_list: str | None, events: str | None,
        profile_freq: int, call_graph: str, profile_scope: str, job_id: int | None,
        target: tuple[str, ...]) -> None:
    """Run a command, a built-in workload or a suite many times; record every sample.

    \b
      perflab run -n 20 --warmup 2 --label baseline -- ./mytool input.dat
      perflab run -n 20 -p size=small,large -- ./mytool-new input-{size}.dat
      perflab run hackbench -p groups=1,4,8 -p mode=process,thread -n 10
      perflab run suites/sis.toml
      perflab run wis -p test=poll2 --monitor perf-stat,perf-profile,vmstat
    """
    from perflab.execute import identity, monitors
    from perflab.execute.runner import Runner, RunOptions, plans_from_spec
    from perflab.execute.targets import CommandChoices, plans_for
    from perflab.model import params as sweeps
    from perflab.render import progress
    from perflab.workloads.suite import machine_variables

    if resume:
        if target:
            raise UsageError("--resume takes no command: the run's own is used")
        with open_store(ctx, create=True) as store:
            info = store.resolve_run(resume)
            plans = plans_from_spec(info.spec)
            run_id = Runner(store, plans, progress.choose(quiet), warn).resume(info)
            _print_run_summary(store, run_id, plans, quiet)
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
                      command=CommandChoices(shell, name, ignore_failure),
                      repetitions=repetitions, duration=duration)
    if not quiet:
        _announce_size(plans)
    sha = describe = None
    if repo:
        sha, describe = identity.git_commit(repo, commit)
    elif commit:
        sha = commit
    with open_store(ctx, create=True) as store:
        runner = Runner(store, plans, progress.choose(quiet), warn)
        run_id = runner.start(label=label or identity.default_label(), commit=sha,
                              describe=describe, repo=os.path.abspath(repo) if repo else None,
                              command_line=["perflab", *COMMAND_LINE], job_id=job_id)
        _print_run_summary(store, run_id, plans, quiet)


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
    with open_store(ctx, create=False) as store:
        click.echo(render_runs(store.list_runs()))


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.pass_context
def show(ctx: click.Context, run_ref: str) -> None:
    """A run's environment and, per point, n, mean, median, stddev, min, max, failures."""
    from perflab.analysis.summary import summarize_run
    from perflab.render.runs import render_show
    with open_store(ctx, create=False) as store:
        info = store.resolve_run(run_ref)
        rows = store.sample_rows(info.id)
        infos = {(b, m): i for b in set(rows.benchmark) for m, i in store.metric_infos(b).items()}
        click.echo(render_show(info, summarize_run(rows, infos)))


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
