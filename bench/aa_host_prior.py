#!/usr/bin/env python3
"""Separate runs judged with a host prior of run-to-run variance: A/A false calls and power.

Data: bench/data/separate-runs/runs.csv (bench/record_separate_runs.py: K separate
`perflab run -n 30` runs of each of several benchmarks, interleaved). Every pair of
distinct runs (i, j) of one benchmark is an A/A comparison of its ``--metric`` (wall
`time`, or CPU time: `user`, `system`), through perflab's own row test
(stats.difference.compare, separate runs, as `perflab compare` calls it), in three designs:

  nothing    nothing on the host: perflab's default prior of the metric's kind
             (analysis.host_model.DEFAULT_PRIORS: wall time's fitted on bench/data/noise*,
             CPU time's on bench/data/separate-runs; ``--default-from FILE`` fits it on
             FILE instead, to evaluate a default on recordings it was not fitted on)
  host prior the host prior of the kind from the OTHER benchmarks only (leave one benchmark
             out: each other benchmark's K runs of each metric of the kind are one
             replicate group, as perflab's host model pools user and system), none of this one
  3 + prior  3 replicate runs of this benchmark (drawn from the runs other than i and j)
             plus the leave-one-out host prior, the variance chosen per row as perflab
             does (stats.separate_runs.choose: own replicates alone under a prior on
             d0 <= 4 or beyond its upper tail, else moderated)
  3, moderated  the same, always moderated (perflab before 2026-11-28: own alone only
             beyond the prior's upper tail), for comparison

the bounds of any such test (bench/power_bound.py):

  3, own only  the same 3 replicate runs alone, no prior (t on their 2 df: perflab's path
               for a row with replicates and no host prior)
  3 + perfect  the oracle's variance (below) on the leave-one-out prior's d0 + 2 df: a prior
               exactly right, of the weight this host's data support

then the same at other d0, K = 2.. own replicates alone and with the host prior, and the
analytic bound (noncentral t against the normal at each benchmark's delta); and, for
reference, the rule perflab used before (changes below 2% not judged, the test
counting only the spread inside each run; removed) and the oracle: Welch on logs with each
benchmark's run-to-run variance taken as known (the ANOVA estimate from all K of its runs).
Power: one side's values times 1.10 (a 10% slow-down), called a regression. Rates are per
row (one comparison), alpha 0.05 two-sided, with Wilson's 95% interval; undecided is its
own share.

--simulate draws the same layout from the model itself instead (8 benchmarks, 12 runs of
30, sigma_b^2 from a scaled inverse chi-square with s0 3%, d0 10; 2% noise inside a run):
where the model holds, what each design gives.

--fit-default prints the default prior of the metric's kind, flat (no trend): wall time's
fitted on bench/data/noise*/ (12 benchmarks in three recording sessions: each session's -a
and -b runs of a benchmark are a replicate pair), each run cut to its first 30 values (a
common run size: the prior describes a run mean's variance at a run size); CPU time's on
--data (each benchmark's K runs of `user` and of `system` are two replicate groups).

Usage: bench/aa_host_prior.py [--data FILE | --simulate] [--metric time|user|system]
           [--default-from FILE] [--seed 2026] [--change 1.10 ...]
       bench/aa_host_prior.py --fit-default [--metric user --data FILE]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

import numpy as np  # noqa: E402  (after the re-exec: the .venv has it)

sys.path.insert(0, str(ROOT / "bench"))

NEEDED: dict[tuple[float, str], list[int]] = {}   # runs a side that would decide, per (factor, design)
FLOOR = 0.01          # the command metric's noise floor (model.records.MetricInfo)
OLD_FLOOR = 0.02      # the removed rule's: changes below it were not judged
STALL_SHARE = 0.10    # analysis.contention's: CPU pressure beyond it is a competing load
DESIGNS = ("nothing", "host prior", "3 + prior", "3, moderated", "3, own only", "3 + perfect", "old 2% rule",
           "oracle")
KINDS = {"time": ("wall time", ("time",)), "user": ("cpu time", ("user", "system")),
         "system": ("cpu time", ("user", "system"))}   # metric -> its kind, and the kind's metrics


def shown(path: Path) -> str:
    """A data file's name as printed: relative to the checkout when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def load_runs(path: Path) -> dict[str, list[dict[str, np.ndarray]]]:
    """benchmark -> its runs in order, each {column: values in repetition order}."""
    rows: dict[str, dict[int, dict[str, list[float]]]] = {}
    with open(path, newline="") as handle:
        for line in csv.DictReader(handle):
            run = rows.setdefault(line["benchmark"], {}).setdefault(int(line["run"]), {})
            for key, value in line.items():
                if key not in ("benchmark", "run", "repetition"):
                    run.setdefault(key, []).append(float(value) if value else math.nan)
    return {b: [{k: np.array(v) for k, v in runs[i].items()} for i in sorted(runs)] for b, runs in rows.items()}


def pairs_parser(description: str, data: Path) -> argparse.ArgumentParser:
    """The options every script judging pairs of separate runs takes: --data (default
    ``data``), --metric, --seed, --change."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=data)
    parser.add_argument("--metric", choices=sorted(KINDS), default="time")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--change", type=factor, action="append",
                        help="factor of the power's change, repeatable (1.10, 2.0)")
    return parser


def factor(text: str) -> float:
    """A power's factor (argparse type): a finite number above 0 (1.10 = +10%)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError(f"a factor above 0 (1.10 = +10%), got {text!r}")
    return value


def runs_or_exit(parser: argparse.ArgumentParser, path: Path) -> dict[str, list[dict[str, np.ndarray]]]:
    """`load_runs` of ``path``, or the parser's one line and exit 2 when it cannot be read."""
    try:
        runs = load_runs(path)
    except (OSError, KeyError, ValueError) as error:
        parser.error(f"cannot read {path}: " + (f"no column {error}" if isinstance(error, KeyError) else str(error)))
    if not runs:
        parser.error(f"no runs in {path}")
    return runs


def noise_runs() -> dict[str, list[np.ndarray]]:
    """bench/data/noise*/NAME-a|b.csv: (session, benchmark) -> its two separate runs (one file
    each, about 4.5 minutes apart): replicates as perflab defines them (one host, kernel and
    session); runs of different sessions are not (another kernel build, another day)."""
    out: dict[str, list[np.ndarray]] = {}
    for path in sorted(ROOT.glob("bench/data/noise*/*-[ab].csv")):
        lines = [line.split(",") for line in path.read_text().splitlines() if line and not line.startswith("#")]
        numbers = np.array([float(value) for _, value in lines[1:]])
        out.setdefault(f"{path.parent.name}/{path.stem[:-2]}", []).append(numbers)
    return out


def simulated(seed: int, benchmarks: int = 8, runs: int = 12, n: int = 30) -> dict[str, list[dict[str, np.ndarray]]]:
    """The recordings' layout drawn from the model: sigma_b^2 ~ s0^2 d0 / chi2_d0 per benchmark."""
    rng = np.random.default_rng(seed)
    s0, d0, within = 0.03, 10.0, 0.02
    out = {}
    for b in range(benchmarks):
        sigma_b = s0 * math.sqrt(d0 / rng.chisquare(d0))
        out[f"sim-{b}"] = [{"time": 0.01 * np.exp(rng.normal(0, sigma_b) + rng.normal(0, within, n)),
                            "psi.cpu_some_us": np.zeros(n), "psi.window_us": np.ones(n)} for _ in range(runs)]
    return out


def prior_of(groups: list[list[np.ndarray]], trend: bool = True):
    """The host prior fitted on replicate groups (each a list of runs' values), as perflab fits it."""
    from perflab.stats.host_prior import fit_prior, spread
    found = [s for s in (spread(g) for g in groups) if s is not None]
    return fit_prior([s.s2 for s in found], [s.df for s in found],
                     covariate=[s.within for s in found] if trend else None)


def kind_groups(data: dict[str, list[dict[str, np.ndarray]]], metric: str,
                leave_out: str | None = None) -> list[list[np.ndarray]]:
    """Every benchmark's (but ``leave_out``'s) K runs of each metric of ``metric``'s kind, a group each."""
    return [[r[m] for r in runs] for name, runs in data.items() if name != leave_out
            for m in KINDS[metric][1] if m in runs[0]]


def default_prior(metric: str, runs: dict[str, list[dict[str, np.ndarray]]] | None):
    """The default prior of ``metric``'s kind: perflab's, or fitted flat on ``runs`` (--default-from's)."""
    from perflab.analysis.host_model import DEFAULT_PRIORS
    if runs is None:
        return DEFAULT_PRIORS[KINDS[metric][0]].prior
    return prior_of(kind_groups(runs, metric), trend=False)


def loaded(run: dict[str, np.ndarray]) -> bool:
    window = np.nansum(run.get("psi.window_us", np.array([math.nan])))
    return bool(window > 0 and np.nansum(run["psi.cpu_some_us"]) / window > STALL_SHARE)


def verdicts(base: dict[str, np.ndarray], new: dict[str, np.ndarray], factor: float, priors: dict,
             own: list[np.ndarray], oracle_s2: float, metric: str) -> dict[str, str]:
    """Each design's verdict on base against new (new's ``metric`` multiplied by ``factor``)."""
    from power_bound import oracle, perfect_prior

    from perflab.model.records import Direction, MeanKind
    from perflab.stats.difference import compare
    from perflab.stats.host_prior import spread
    from perflab.stats.separate_runs import WEAK_PRIOR, RunToRun
    from perflab.stats.variance import between_runs

    a, b = base[metric], new[metric] * factor
    load = (loaded(base), loaded(new))
    common = {"direction": Direction.LOWER, "mean_kind": MeanKind.ARITHMETIC, "noise_floor": FLOOR}
    own_spread = spread(own)
    known = {
        "nothing": RunToRun(priors["default"], True, 0, None, 0, load),
        "host prior": RunToRun(priors["lobo"], False, priors["others"], None, 0, load),
        "3 + prior": RunToRun(priors["lobo"], False, priors["others"], own_spread, len(own), load),
    }
    rows = {name: compare(a, b, separate_runs=True, run_to_run=k, **common)  # type: ignore[arg-type]
            for name, k in known.items()}
    out = {name: d.verdict.value for name, d in rows.items()}
    out["3, moderated"] = compare(a, b, separate_runs=True, run_to_run=known["3 + prior"], skip=frozenset({WEAK_PRIOR}),
                                  **common).verdict.value  # type: ignore[arg-type]
    NEEDED.setdefault((factor, "host prior"), []).append(rows["host prior"].runs_needed or 10**9)
    NEEDED.setdefault((factor, "3 + prior"), []).append(rows["3 + prior"].runs_needed or 10**9)
    # the removed rule: changes below 2% not judged, the rest by the spread inside each run
    out["old 2% rule"] = compare(a, b, **{**common, "noise_floor": OLD_FLOOR}).verdict.value  # type: ignore[arg-type]
    # the bounds (bench/power_bound.py): own replicates alone (t on d df); the oracle's variance on d0 + d df
    own_only = between_runs(own)
    out["3, own only"] = compare(a, b, separate_runs=True, run_variance=own_only, **common).verdict.value  # type: ignore[arg-type]
    perfect = perfect_prior(oracle_s2, priors["lobo"].d0 + (own_spread.df if own_spread else 0.0))
    out["3 + perfect"] = compare(a, b, separate_runs=True, run_variance=perfect, **common).verdict.value  # type: ignore[arg-type]
    out["oracle"] = compare(a, b, separate_runs=True, run_variance=oracle(oracle_s2), **common).verdict.value  # type: ignore[arg-type]
    return out


def evaluate(data: dict[str, list[dict[str, np.ndarray]]], seed: int, change: float, metric: str,
             default) -> tuple[dict[str, dict[str, list[int]]], dict]:
    """design -> {"aa": [false calls, undecided, trials], "power": [regressions called, undecided, trials]},
    and the bounds' power tallies (bench/power_bound.py: key -> [calls, trials, oracle's too])."""
    from power_bound import bound_calls, tally

    from perflab.stats.variance import between_runs
    rng = np.random.default_rng(seed)
    further = np.random.default_rng(seed + 1)   # the K search's replicates beyond the 3, apart from rng's draws
    counts = {d: {"aa": [0, 0, 0], "power": [0, 0, 0]} for d in DESIGNS}
    bounds: dict = {}
    for name, runs in data.items():
        priors = {"default": default, "lobo": prior_of(kind_groups(data, metric, name)), "others": len(data) - 1}
        truth = between_runs([r[metric] for r in runs])   # sigma_b^2, net of the within-run noise
        oracle_s2 = truth.sigma2 if truth is not None else 0.0
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                rest = [k for k in range(len(runs)) if k not in (i, j)]
                chosen = list(rng.choice(rest, size=3, replace=False))
                order = chosen + list(further.permutation([k for k in rest if k not in chosen]))
                own = [runs[k][metric] for k in chosen]
                for kind, factor, hit in (("aa", 1.0, ("improvement", "regression")),
                                          ("power", change, ("regression",))):
                    found = verdicts(runs[i], runs[j], factor, priors, own, oracle_s2, metric)
                    for design, verdict in found.items():
                        row = counts[design][kind]
                        row[0] += verdict in hit
                        row[1] += verdict == "undecided"
                        row[2] += 1
                calls = bound_calls(runs[i][metric], runs[j][metric] * change, FLOOR, oracle_s2,
                                    [runs[k][metric] for k in order], priors["lobo"], priors["others"],
                                    (loaded(runs[i]), loaded(runs[j])))
                calls[("fitted", 0.0)] = found["3 + perfect"] == "regression"   # (b), for its share's interval
                tally(bounds, calls, found["oracle"] == "regression")
    return counts, bounds


def per_benchmark(data: dict[str, list[dict[str, np.ndarray]]], metric: str) -> list[str]:
    from perflab.stats.variance import between_runs
    lines = []
    for name, runs in data.items():
        s = between_runs([r[metric] for r in runs])
        within = 100 * math.sqrt(s.ms_within) if s else math.nan
        between = s.cov_pct if s else math.nan
        zeros = sum(int(np.sum(r[metric] <= 0)) for r in runs)
        lines.append(f"  {name:<16} {len(runs):>3} runs  within-run sd {within:6.2f}%  between-run sd {between:6.2f}%"
                     f"  loaded runs {sum(loaded(r) for r in runs)}  values <= 0: {zeros}")
    return lines


def fit_default(metric: str, runs: dict[str, list[dict[str, np.ndarray]]] | None, data: Path) -> None:
    """Print the default prior of ``metric``'s kind, fitted flat (see the module's --fit-default):
    wall time's on bench/data/noise*, CPU time's on ``runs`` (those of file ``data``)."""
    kind = KINDS[metric][0]
    if kind == "wall time":
        # flat: a trend learned on one machine, carried to another, can understate a quiet
        # benchmark's run-to-run spread there (18.9% A/A with --simulate); a default must not
        groups = [[run[:30] for run in runs] for runs in noise_runs().values()]
        where = "replicate pairs of bench/data/noise*"
    else:
        groups = kind_groups(runs or {}, metric)
        where = f"replicate groups (user, system) of {shown(data)}"
    prior = prior_of(groups, trend=False)
    print(f"default {kind} prior from {len(groups)} {where}: s0 {prior.cov_pct:.2f}%, d0 {prior.d0:.4f}\n  {prior}")


def main() -> int:
    parser = pairs_parser(__doc__.splitlines()[0], ROOT / "bench" / "data" / "separate-runs" / "runs.csv")
    parser.add_argument("--default-from", type=Path, help="fit the 'nothing' design's default prior on this file")
    parser.add_argument("--fit-default", action="store_true")
    parser.add_argument("--simulate", action="store_true", help="data drawn from the model, not --data (time only)")
    args = parser.parse_args()
    if args.fit_default:
        wall = KINDS[args.metric][0] == "wall time"   # fitted on bench/data/noise*, not --data
        fit_default(args.metric, None if wall else runs_or_exit(parser, args.data), args.data)
        return 0
    data = simulated(args.seed) if args.simulate else runs_or_exit(parser, args.data)
    default_runs = runs_or_exit(parser, args.default_from) if args.default_from else None
    from aa_calibration import wilson
    metric = "time" if args.simulate else args.metric
    where = "simulated (s0 3%, d0 10, 2% inside a run)" if args.simulate else shown(args.data)
    print(f"{where}: {len(data)} benchmarks, {metric} ({KINDS[metric][0]}), every pair of separate runs")
    print("\n".join(per_benchmark(data, metric)))
    default = default_prior(metric, default_runs)
    source = shown(args.default_from) if args.default_from else "perflab's"
    print(f"default prior ({source}): s0 {default.cov_pct:.2f}%, d0 {default.d0:.2f}; leave-one-out host priors:")
    lobo = {name: prior_of(kind_groups(data, metric, name)) for name in data}
    for name, p in lobo.items():
        print(f"  without {name:<16} s0 {p.cov_pct:6.2f}%  d0 {p.d0:5.2f}  trend slope {p.slope:+.2f}" if p else
              f"  without {name}: no prior")
    if None in lobo.values():
        print("aa_host_prior: the designs need a leave-one-out host prior for every benchmark: give more "
              "benchmarks or runs", file=sys.stderr)
        return 2
    for change in args.change or [1.10]:
        counts, bounds = evaluate(data, args.seed, change, metric, default)
        table(counts, change, wilson)
        bound_table(data, metric, lobo, change, counts, bounds, wilson)
    return 0


def bound_table(data: dict[str, list[dict[str, np.ndarray]]], metric: str, lobo: dict, change: float,
                counts: dict[str, dict[str, list[int]]], bounds: dict, wilson) -> None:
    """The power bounds at ``change`` (bench/power_bound.py): simulated on the same pairs, then analytic."""
    from power_bound import analytic_lines, benchmark, bound_lines
    print(f"\nbounds at +{100 * (change - 1):g}%, simulated on the same pairs (power; its share of the oracle's):")
    print("\n".join(bound_lines(bounds, counts["oracle"]["power"][0], wilson)))
    found = [benchmark(name, [r[metric] for r in runs], lobo[name].d0, change, FLOOR)
             for name, runs in data.items() if lobo[name]]
    print("analytic: noncentral t on df against the normal (the oracle) at each benchmark's "
          "delta = log(factor) / se, se^2 = 2 (sigma_b^2 + sigma_w^2 / n):")
    print("\n".join(analytic_lines([b for b in found if b is not None and b.weight > 0], change)))


def table(counts: dict[str, dict[str, list[int]]], change: float, wilson) -> None:
    oracle_power = counts["oracle"]["power"][0] / counts["oracle"]["power"][2]
    title = f"power at +{100 * (change - 1):g}% (95% CI)"
    print(f"\n{'design':<12} {'A/A false calls (95% CI)':<28} {'undecided':>9}   {title:<26} "
          f"{'undecided':>9}  {'of oracle':>9}")
    for design in DESIGNS:
        row = []
        for kind in ("aa", "power"):
            hits, undecided, trials = counts[design][kind]
            low, high = wilson(hits / trials, trials)
            row.append(f"{100 * hits / trials:5.1f}% ({100 * low:4.1f}..{100 * high:4.1f}%) of {trials:<4}")
            row.append(f"{100 * undecided / trials:8.1f}%")
        power = counts[design]["power"][0] / counts[design]["power"][2]
        ratio = f"{100 * power / oracle_power:8.0f}%" if oracle_power else "-"
        print(f"{design:<12} {row[0]:<28} {row[1]:>9}   {row[2]:<26} {row[3]:>9}  {ratio:>9}")
    for design in ("host prior", "3 + prior"):
        needed = NEEDED.get((change, design), [])
        if needed:
            median = float(np.median(needed))
            print(f"  {design}: median runs a side that would decide a change of the row's size (at least "
                  f"{100 * FLOOR:g}%) with 80% power: " + (f"{median:.0f}" if median < 10**9 else "over 1000"))


if __name__ == "__main__":
    sys.exit(main())
