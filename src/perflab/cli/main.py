"""The perflab command line: parse, call one function, render, set the exit code."""

from __future__ import annotations

import os
import sys

import click

from perflab.cli.common import open_store, warn, write_output
from perflab.model.errors import (
    EXIT_INTERRUPTED, EXIT_USAGE, EXIT_VERDICT, PerflabError, RunInterrupted, UsageError,
)


def _fail(message: str, code: int) -> None:
    click.echo(f"perflab: error: {message}", err=True)
    sys.exit(code)


_command_line: list[str] = []  # this invocation's arguments, kept with a run to reproduce it


def main(argv: list[str] | None = None) -> None:
    """Entry point: every user mistake ends as one line on stderr and an exit code."""
    _command_line[:] = sys.argv[1:] if argv is None else argv
    try:
        cli.main(args=argv, prog_name="perflab", standalone_mode=False)
    except PerflabError as error:
        _fail(str(error), error.exit_code)
    except RunInterrupted as stop:
        click.echo(f"perflab: {stop}; finish it with 'perflab run --resume {stop.run_id}'", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.Abort:
        _fail("aborted", EXIT_INTERRUPTED)
    except click.ClickException as error:
        _fail(error.format_message().replace("\n", " "), error.exit_code or EXIT_USAGE)
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # `perflab export ... | head`: the reader left; that is not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="PATH|URL", help="Database file or PostgreSQL URL "
              "(default: $PERFLAB_DB, else $XDG_DATA_HOME/perflab/perflab.db).")
@click.version_option(package_name="perflab")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """perflab: run benchmarks, keep every sample, compare with statistics you can trust."""
    ctx.obj = {"db": db}




# -- run ---------------------------------------------------------------------------
class _RunCommand(click.Command):
    """Remembers whether ``--`` was given: words after it are a command, never a workload."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.dashdash"] = "--" in args
        return super().parse_args(ctx, args)


@cli.command(cls=_RunCommand)
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
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, repetitions: int | None, warmup: int, label: str | None, commit: str | None,
        repo: str | None, params: tuple[str, ...], lists: tuple, scans: tuple, scan_step: str | None,
        shell: bool, name: str | None, timeout: float | None, ignore_failure: bool,
        prepare: str | None, setup: str | None, cleanup: str | None, shuffle: bool,
        seed: int | None, cpu_list: str | None, show_output: bool, quiet: bool,
        duration: float | None, resume: str | None, monitor_list: str | None, events: str | None,
        profile_freq: int, call_graph: str, profile_scope: str, target: tuple[str, ...]) -> None:
    """Run a command, a built-in workload or a suite many times; record every sample.

    \b
      perflab run -n 20 --warmup 2 --label baseline -- ./mytool input.dat
      perflab run -n 20 -p size=small,large -- ./mytool-new input-{size}.dat
      perflab run hackbench -p groups=1,4,8 -p mode=process,thread -n 10
      perflab run suites/sis.toml
      perflab run wis -p test=poll2 --monitor perf-stat,perf-profile,vmstat
    """
    from perflab.execute import identity, monitors
    from perflab.execute.runner import RunOptions, Runner, plans_from_spec
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
                         profile_freq=profile_freq, call_graph=call_graph, profile_scope=profile_scope)
    plans = plans_for(list(target), after_dashdash=ctx.meta.get("perflab.dashdash", False),
                      sweep=sweep, options=options,
                      command=CommandChoices(shell, name, ignore_failure),
                      repetitions=repetitions, duration=duration)
    sha = describe = None
    if repo:
        sha, describe = identity.git_commit(repo, commit)
    elif commit:
        sha = commit
    with open_store(ctx, create=True) as store:
        runner = Runner(store, plans, progress.choose(quiet), warn)
        run_id = runner.start(label=label or identity.default_label(), commit=sha,
                              describe=describe, repo=os.path.abspath(repo) if repo else None,
                              command_line=["perflab", *_command_line])
        _print_run_summary(store, run_id, plans, quiet)


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
@cli.command()
@click.pass_context
def runs(ctx: click.Context) -> None:
    """One line per run: id, label, commit, host, when, status, benchmarks, samples."""
    from perflab.render.runs import render_runs
    with open_store(ctx, create=False) as store:
        click.echo(render_runs(store.list_runs()))


@cli.command()
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


@cli.command()
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


# -- compare / import -------------------------------------------------------------------
COMPARE_FORMATS = ["mmtests", "lkp", "benchstat", "speedup", "markdown", "json", "csv"]


def _percent(text: str, option: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UsageError(f"bad {option} {text!r}: expected a percentage like 2%") from None
    if value < 0:
        raise UsageError(f"{option} cannot be negative: {text}")
    return value


@cli.command()
@click.argument("run_refs", nargs=-1, required=True, metavar="BASE CANDIDATE...")
@click.option("--format", "fmt", type=click.Choice(COMPARE_FORMATS), default="mmtests", show_default=True)
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="benchmark=NAME or PARAM=VALUE[,VALUE]; repeatable.")
@click.option("--metric", "metrics", multiple=True, help="Only these metrics; repeatable.")
@click.option("--method", type=click.Choice(["welch-log", "mann-whitney", "mmtests", "lkp"]),
              default="welch-log", show_default=True, help="The test (or a reference tool's rule).")
@click.option("--fdr", type=float, default=0.05, show_default=True,
              help="False discovery rate controlled across the report.")
@click.option("--noise-floor", metavar="PCT", help="Smallest change called a change (default: per metric, 1%).")
@click.option("--rows", default="amean", show_default=True,
              help="mmtests rows: amean,min,max,stddev,coeffvar,bamean-95,...")
@click.option("--fail-on", type=click.Choice(["regression"]), help="Exit 1 on a significant regression.")
@click.option("--threshold", default="0%", show_default=True, help="Smallest regression that fails --fail-on.")
@click.option("--profile", "with_profile", is_flag=True,
              help="Add profile deltas (points) and counter deltas, lkp style (mmtests, lkp, json).")
@click.pass_context
def compare(ctx: click.Context, run_refs: tuple[str, ...], fmt: str, filters: tuple[str, ...],
            metrics: tuple[str, ...], method: str, fdr: float, noise_floor: str | None, rows: str,
            fail_on: str | None, threshold: str, with_profile: bool) -> None:
    """Compare a baseline run with candidates (run ids or labels; the first is the baseline)."""
    from perflab.analysis.compare import Filters, compare_runs, regressions
    from perflab.render.compare import render_comparison

    if len(run_refs) < 2:
        raise UsageError("compare needs a baseline and at least one candidate")
    if not 0 < fdr < 1:
        raise UsageError(f"--fdr must be between 0 and 1, got {fdr}")
    limit = _percent(threshold, "--threshold")
    floor = _percent(noise_floor, "--noise-floor") / 100 if noise_floor is not None else None
    selection = Filters.parse(list(filters), list(metrics))
    with open_store(ctx, create=False) as store:
        runs = [store.resolve_run(ref) for ref in run_refs]
        comparison = compare_runs(store, runs, filters=selection, method=method, q=fdr,
                                  noise_floor=floor)
        profile = None
        if with_profile:
            from perflab.analysis.profile import profile_report
            from perflab.render.compare import PROFILE_FORMATS
            if fmt not in PROFILE_FORMATS:
                raise UsageError(f"--profile works with --format {', '.join(PROFILE_FORMATS)}, not {fmt}")
            profile = profile_report(store, runs, filters=selection, method=method, q=fdr, noise_floor=floor)
    click.echo(render_comparison(comparison, fmt, rows=tuple(r.strip() for r in rows.split(",")),
                                 profile=profile), nl=False)
    if fail_on:
        found = regressions(comparison, limit)
        if found:
            row, index = found[0]
            change = row.cells[index].difference.change_pct
            click.echo(f"perflab: {len(found)} significant regression(s) of at least {limit:g}%; "
                       f"first: {row.benchmark} {row.point} {row.metric} {change:+.2f}% "
                       f"in {comparison.labels[index + 1]}", err=True)
            sys.exit(EXIT_VERDICT)


@cli.command(name="import")
@click.argument("kind", type=click.Choice(["hyperfine", "pyperf"]))
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--label", required=True, help="Label of the new run.")
@click.pass_context
def import_(ctx: click.Context, kind: str, path: str, label: str) -> None:
    """Import a hyperfine or pyperf JSON file as a run."""
    from perflab.analysis.importing import import_file
    from perflab.workloads.importers import parse_file
    parsed = parse_file(kind, path)  # a malformed file fails here, before the database opens
    with open_store(ctx, create=True) as store:
        run_id = import_file(store, parsed, label)
    click.echo(f"imported {path} as run {run_id} ({label})")


# -- workloads ----------------------------------------------------------------------------
@cli.command()
def workloads() -> None:
    """Built-in workloads: what each measures, parameters, metrics, available here or why not."""
    from perflab.render.workloads import render_workloads
    from perflab.workloads.command import CommandWorkload
    from perflab.workloads.registry import all_builtin
    entries = [(w, w.unavailable()) for w in all_builtin()] + [(CommandWorkload, None)]
    click.echo(render_workloads(entries))


# -- doctor -----------------------------------------------------------------------------
@cli.command()
def doctor() -> None:
    """This machine as a benchmark host: what works, what adds noise, how to fix it."""
    from perflab.execute import environment, probe, tuning
    from perflab.render.doctor import render_doctor
    env = environment.capture()
    findings = tuning.check(env, is_root=os.geteuid() == 0)
    click.echo(render_doctor(env, findings, probe.perf_events(), probe.find_tools(), probe.TOOLS))


# -- commands that live in their own modules ---------------------------------------------
def _register(modules: list) -> None:
    for module in modules:
        for command in module.COMMANDS:
            cli.add_command(command)


from perflab.cli import bisect, changepoints, history, profile  # noqa: E402  (after cli exists)

_register([profile, history, changepoints, bisect])


if __name__ == "__main__":  # pragma: no cover
    main()
