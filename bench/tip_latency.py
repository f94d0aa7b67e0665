#!/usr/bin/env python3
"""The tip detector's latency and false alerts on this machine's real noise (stats/tip.py).

A commit's value is the median of --per-commit consecutive repetitions of a recording (as
perflab records a commit: the median of its run's samples). The default is perflab's own
repetitions per commit (RunOptions.repetitions, 10: what the robot runs unless its suite
says otherwise); 1 = every repetition a commit.

Latency: a history of --history commits of real noise (a contiguous block of a recording's
relative residuals about its running median, so its memory and tails are kept), then a
step of 2, 3, 4 or 5 sds and 10 more commits (--history: 50, or as many as the recordings
hold: 29 at 10 per commit); the robot looks at each commit after the step. Commits until
"suspect" (either state) and until "confirmed": median and p90 (">10": not within 10), and
the share suspect within 2 and confirmed within 5 (the targets: >= 90% each for 4 sd). An
sd (--scale) is the history's own sd, or the recording's robust sd (1.4826·MAD of its
commits' residuals: the bulk of the noise; its spikes make the plain sd 1.5-16 times larger).

False alerts: the robot looks at every commit of each raw recording (bench/data/noise,
noise-quiet, noise-idle), remembering the levels it confirmed (stats/tip.watch, as
`alerts --update` does); an alert is a distinct first commit of a suspect or of a
confirmed finding, counted apart. Only alerts whose first commit lies outside the regimes
the set's labels.json annotates (bench/label_regimes.py) are false; they are counted per
1,000 looks outside them (looks whose newest commit lies outside). Each alert is then
rerun as the robot reruns it (stats/rerun, on the repetitions recorded right after the look
that raised it): "after rerun" counts those it does not withdraw. --explain lists each
with its size, length, distance to the nearest label, the recording's memory and its
rerun's verdict, and every block of the recordings whose 4-sd step is not suspect within 2
commits (`misses`).

Trade-off: --false-rate R1 R2 ... (the detector's stated false alerts per 1,000 looks) prints one
row per rate: the latency shares on the same series and the pooled false alerts.

Usage: bench/tip_latency.py [--trials 200] [--history N] [--per-commit N] [--seed 2026] [--scale both]
       [--explain] [--sets NAME ...] [--false-rate PER_1000 ...] [--rule NAME]   (--trials 0: false alerts only;
       --rule: a candidate look of bench/tip_null.py in the code's place)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))
SETS = ("noise", "noise-quiet", "noise-idle")
STEPS = (2.0, 3.0, 4.0, 5.0)
AFTER = 10


def first_commit(looks: list, states: tuple[str, ...]) -> int:
    """1-based commit after the step at which a look first reached one of ``states``; AFTER+1: never."""
    return next((i + 1 for i, f in enumerate(looks) if f.status in states), AFTER + 1)


def step_sd(r: np.ndarray, history: np.ndarray, scale: str) -> float:
    """The sd a step is counted in: the history's own sd (what the robot sees) or the
    recording's robust sd (1.4826·MAD: the bulk of its noise, without its spikes)."""
    if scale == "sd":
        return float(history.std(ddof=1))
    return float(1.482602 * np.median(np.abs(r - np.median(r))))


def latency_series(noises: list[np.ndarray], history: int, trials: int, rng: np.random.Generator, scale: str,
                   false_rate: float) -> dict[float, tuple[list[int], list[int], list[tuple[int, int]]]]:
    """Per step size: (commits until suspect, commits until confirmed, (recording, start) of
    each series) over ``trials`` series."""
    from perflab.stats import tip
    out = {}
    for d in STEPS:
        sus, con, where = [], [], []
        for _ in range(trials):
            i = int(rng.integers(len(noises)))
            r = noises[i]
            start = int(rng.integers(0, r.size - history - AFTER))
            e = r[start:start + history + AFTER]
            sd = step_sd(r, e[:history], scale)
            x = 1.0 + e + np.r_[np.zeros(history), np.full(AFTER, d * sd)]
            looks = tip.replay(x, first=history + 1, false_rate=false_rate)
            sus.append(first_commit(looks, (tip.SUSPECT, tip.CONFIRMED)))
            con.append(first_commit(looks, (tip.CONFIRMED,)))
            where.append((i, start))
        out[d] = (sus, con, where)
    return out


def distinct_share(hits: list[bool], where: list[tuple[int, int]]) -> str:
    """The share over distinct series (a series drawn twice is the same series: its looks are
    the same) with its exact two-sided 95% binomial interval: how finely the recordings can
    tell a share (at 10 repetitions a commit each recording holds one block of history +
    AFTER commits, so the draws repeat ~70 series)."""
    from scipy.stats import beta
    once = dict(zip(where, hits, strict=True))
    n, k = len(once), sum(once.values())
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} {low:.0%}-{high:.0%}"


def latency(noises: list[np.ndarray], history: int, trials: int, rng: np.random.Generator, scale: str,
            false_rate: float) -> None:
    print(f"latency: {trials} series per step, history {history} commits of real noise, then the step "
          f"(in {'the history' if scale == 'sd' else 'robust'} sds)")
    print(f"{'step':>5}{'suspect med/p90':>18}{'<= 2':>7}{'confirmed med/p90':>20}{'<= 5':>7}"
          f"{'distinct series <= 2, 95% interval':>36}{'<= 5':>16}")

    def text(v: list[int]) -> str:
        med, p90 = (int(np.percentile(v, q, method="higher")) for q in (50, 90))
        return "/".join(str(c) if c <= AFTER else f">{AFTER}" for c in (med, p90))
    for d, (sus, con, where) in latency_series(noises, history, trials, rng, scale, false_rate).items():
        early, held = [c <= 2 for c in sus], [c <= 5 for c in con]
        print(f"{d:>4.0f}σ{text(sus):>18}{np.mean(early):>7.0%}{text(con):>20}{np.mean(held):>7.0%}"
              f"{distinct_share(early, where):>36}{distinct_share(held, where):>16}")


def misses(noises: list[np.ndarray], names: list[str], history: int, false_rate: float, step: float = 4.0) -> None:
    """Every non-overlapping block of each recording (history + AFTER commits) with a step of
    ``step`` history sds after its history: those not suspect within 2 commits, with the
    noise of their two tip commits about the history's mean (history sds) and the m = 2
    suspect statistic against its bar (both scales' bar: the values are positive)."""
    from perflab.stats import tip
    print(f"\nmisses: every block of {history} + {AFTER} commits, {step:.0f}-sd step (history sds), "
          "not suspect within 2; tip noise in history sds, m = 2 statistic / bar")
    blocks = missed = 0
    for name, r in zip(names, noises, strict=True):
        for start in range(0, r.size - history - AFTER + 1, history + AFTER):
            e = r[start:start + history + AFTER]
            past, sd = e[:history], float(e[:history].std(ddof=1))
            x = 1.0 + e + np.r_[np.zeros(history), np.full(AFTER, step * sd)]
            looks = tip.replay(x[:history + 2], first=history + 1, false_rate=false_rate)
            blocks += 1
            if any(f.status in (tip.SUSPECT, tip.CONFIRMED) for f in looks):
                continue
            missed += 1
            noise = (e[history:history + 2] - past.mean()) / sd
            stat = abs(float((x[history:history + 2] - x[:history].mean()).mean())) / sd * math.sqrt(2)
            print(f"    {name:<34} start {start:>4}  tip noise {noise[0]:+5.2f} {noise[1]:+5.2f}  "
                  f"{stat:5.2f} / {tip.suspect_bar(history, 2, false_rate / 2):.2f}")
    print(f"  missed {missed} of {blocks} blocks")


def oracle(noises: list[np.ndarray], step: float = 4.0, alpha: float = 1e-3) -> None:
    """The best the newest two commits can do: a rule that knows the level and each
    recording's own noise law (its residuals' pairs) sets its bar at that law's 1 - alpha
    quantile (with ~400 pairs: near their largest, so below the true bar: the power is, if
    anything, overstated); its power over all recordings (the share of series the latency
    table counts) and in the median recording, for the mean of the two and for the
    smaller of two on one side."""
    rules = {"mean of 2": lambda p: np.abs(p.mean(1)),
             "both beyond": lambda p: np.where(np.sign(p[:, 0]) == np.sign(p[:, 1]), np.abs(p).min(1), 0.0)}
    print(f"\noracle (level and noise law known), {step:.0f}-sd step at the newest 2 commits, "
          f"{1000 * alpha:.0f} false per 1,000 looks: power over all / in the median recording")
    for name, rule in rules.items():
        for scale in ("sd", "robust"):
            power = []
            for r in noises:
                e = r - np.median(r)
                pairs = np.c_[e[:-1], e[1:]]
                bar = np.quantile(rule(pairs), 1 - alpha)
                power.append(np.mean(rule(pairs + step * step_sd(e, e, scale)) > bar))
            print(f"  {name:<12} {scale:<7} sds  {np.mean(power):4.0%} / {np.median(power):4.0%}")


def commits(x: np.ndarray, per_commit: int) -> np.ndarray:
    """Medians of consecutive blocks of ``per_commit`` repetitions: one value per commit."""
    n = x.size // per_commit
    return np.asarray(np.median(x[:n * per_commit].reshape(n, per_commit), axis=1))


def labelled_spans(folder: Path) -> dict[str, list[tuple[int, int]]]:
    """The set's labelled regimes per recording, [first, end) in repetitions (none without labels.json)."""
    labels_file = folder / "labels.json"
    labels = json.loads(labels_file.read_text())["regimes"] if labels_file.is_file() else {}
    return {name: [(r["first"], r["end"]) for r in v] for name, v in labels.items()}


def outside(start: int, per_commit: int, spans: list[tuple[int, int]]) -> bool:
    """Whether commit ``start`` lies outside every labelled regime, with a margin of 5
    repetitions and one commit either side."""
    margin = 5 + per_commit
    return not any(a - margin <= start * per_commit <= b + margin for a, b in spans)


def false_alerts(folder: Path, per_commit: int, false_rate: float) -> tuple[int, dict[str, int], list[dict]]:
    """(looks outside the set's labelled regimes, alerts by state starting outside them,
    those alerts described) over its recordings. A look is outside when its newest commit is.
    As the robot does, each alert (a first commit) is rerun at the look that first raised it,
    suspect or confirmed (`rerun_after`), and again when a suspect whose rerun was undecided
    is confirmed. "kept suspect" / "kept confirmed": alerts their last rerun did not
    withdraw, by the last state they reached."""
    import changepoints_accuracy as accuracy

    from perflab.stats import tip
    spans = labelled_spans(folder)
    looks, out, described = 0, {tip.SUSPECT: 0, tip.CONFIRMED: 0, "kept suspect": 0, "kept confirmed": 0}, []
    for name, raw in accuracy.load_noise(folder).items():
        x = commits(raw, per_commit)
        found = tip.watch(x, false_rate=false_rate)
        first = x.size - len(found)
        looks += sum(outside(first + i, per_commit, spans.get(name, [])) for i in range(len(found)))
        verdicts: dict[int, tuple[str, str]] = {}   # first commit: (state when rerun, verdict)
        for i, f in enumerate(found):   # a rerun when raised, again when confirmed after "undecided"
            was = verdicts.get(f.start)
            if f.status in (tip.SUSPECT, tip.CONFIRMED) and (
                    was is None or (f.status == tip.CONFIRMED and was == (tip.SUSPECT, "undecided"))):
                verdicts[f.start] = (f.status, rerun_after(raw, (first + i + 1) * per_commit, per_commit, f))
        for s, (_, verdict) in verdicts.items():
            if outside(s, per_commit, spans.get(name, [])) and verdict != "not reproduced":
                out["kept confirmed" if _ever_confirmed(found, s) else "kept suspect"] += 1
        for state in (tip.SUSPECT, tip.CONFIRMED):
            firsts = {f.start: f for f in reversed(found) if f.status == state}
            for s, f in sorted(firsts.items()):
                if outside(s, per_commit, spans.get(name, [])):
                    out[state] += 1
                    row = describe(name, state, f, x, per_commit, spans.get(name, []))
                    described.append({**row, "rerun": verdicts[s][1]})
    return looks, out, described


def _ever_confirmed(found: list, start: int) -> bool:
    from perflab.stats import tip
    return any(f.status == tip.CONFIRMED and f.start == start for f in found)


def rerun_after(raw: np.ndarray, at: int, per_commit: int, f) -> str:
    """The robot's rerun of a tip alert (analysis/alert_reruns.py), on the recording's
    repetitions from ``at`` (right after the look that raised it): stats/rerun.order()'s runs of
    ``per_commit`` repetitions each, last good and first bad alike (the recording's command
    did not change), judged by stats/rerun.judge as `alerts --update` judges them. "no
    rerun": the recording ends first (the alert then stands)."""
    from perflab.stats import rerun
    sides = rerun.order()
    if at + len(sides) * per_commit > raw.size:
        return "no rerun"
    medians = {"good": [], "bad": []}
    for i, side in enumerate(sides):
        medians[side].append(float(np.median(raw[at + i * per_commit: at + (i + 1) * per_commit])))
    return rerun.judge(medians["good"], medians["bad"], f.level, f.level_after).outcome


def describe(name: str, state: str, f, x: np.ndarray, per_commit: int, spans: list[tuple[int, int]]) -> dict:
    """One false alert: where, how large, how long the excursion lasted in the data after it
    (commits from its start on the same side beyond 2 of the history's sds), how far the
    nearest labelled regime is (repetitions; -1: none in the recording), and the recording's
    memory (`memory`)."""
    side = np.sign(f.z)
    run = 0
    while f.start + run < x.size and side * (x[f.start + run] - f.level) > 2 * f.scale:
        run += 1
    near = min((min(abs(f.start * per_commit - a), abs(f.start * per_commit - b)) for a, b in spans), default=-1)
    return {"name": name, "state": state, "start": f.start, "m": f.commits, "z": f.z, "pct": f.change_pct,
            "run": run, "near": near, "history": f.history, **memory(x)}


def memory(x: np.ndarray) -> dict[str, float]:
    """The recording's lag-1 autocorrelation (of its commits about their median, ranks:
    spikes do not set it) and its wander: the robust sd of 10-commit block medians over
    the robust sd of single commits times √10 (1 for independent noise; more: slow wander)."""
    from scipy.stats import spearmanr
    rho = float(spearmanr(x[:-1], x[1:])[0])
    n = x.size // 10
    blocks = np.median(x[:n * 10].reshape(n, 10), axis=1)

    def mad(v: np.ndarray) -> float:
        return float(1.4826 * np.median(np.abs(v - np.median(v))))
    return {"rho1": rho, "wander": mad(blocks) / mad(x) * math.sqrt(10) / 1.2533 if mad(x) > 0 else math.nan}


def explain(rows: list[dict]) -> None:
    """Print each false alert outside the labels, then a summary by excursion length."""
    print(f"    {'recording':<22}{'state':<10}{'start':>6}{'m':>4}{'z':>7}{'%':>8}{'run':>5}{'label at':>9}"
          f"{'hist':>5}{'rho1':>6}{'wander':>7}  rerun")
    for r in rows:
        print(f"    {r['name']:<22}{r['state']:<10}{r['start']:>6}{r['m']:>4}{r['z']:>7.1f}{r['pct']:>+8.1f}"
              f"{r['run']:>5}{r['near']:>9}{r['history']:>5}{r['rho1']:>6.2f}{r['wander']:>7.1f}  "
              f"{r.get('rerun', '')}")


def report_false_alerts(sets: list[str], per_commit: int, explain_them: bool, false_rate: float) -> None:
    """Per set and pooled: looks and false alerts outside the labels, per 1,000, and the
    pooled rate's exact one-sided 95% Poisson bounds (how finely these recordings can tell)."""
    print("\nfalse alerts on the recordings, outside their labelled regimes (looks whose newest commit, "
          "alerts whose first commit lies outside): suspect / confirmed")
    total, counts = 0, {"suspect": 0, "confirmed": 0, "kept suspect": 0, "kept confirmed": 0}
    for s in sets:
        looks, out, rows = false_alerts(ROOT / "data" / s, per_commit, false_rate)
        print(f"  {s:<12}{looks:>6} looks  {out['suspect']:>3} / {out['confirmed']:>3} alerts  "
              f"{1000 * out['suspect'] / looks:5.2f} / {1000 * out['confirmed'] / looks:5.2f} per 1,000; "
              f"kept after the robot's rerun {out['kept suspect']} / {out['kept confirmed']}")
        if explain_them:
            explain(rows)
        total += looks
        counts = {k: counts[k] + out[k] for k in counts}
    print(f"  {'pooled':<12}{total:>6} looks  {counts['suspect']:>3} / {counts['confirmed']:>3} alerts  "
          f"suspect {per_1000(counts['suspect'], total)}, confirmed {per_1000(counts['confirmed'], total)} "
          "per 1,000 (one-sided 95% bounds)")
    print(f"  {'after rerun':<12}{total:>6} looks  alerts the robot's rerun did not withdraw, by their last "
          f"state: suspect {per_1000(counts['kept suspect'], total)}, confirmed "
          f"{per_1000(counts['kept confirmed'], total)} per 1,000")


def per_1000(k: int, looks: int) -> str:
    """k alerts in ``looks`` as a rate per 1,000 with its exact one-sided 95% Poisson bounds."""
    from scipy.stats import chi2
    low = chi2.ppf(0.05, 2 * k) / 2 if k else 0.0
    return f"{1000 * k / looks:.2f} ({1000 * low / looks:.2f}-{1000 * chi2.ppf(0.95, 2 * k + 2) / 2 / looks:.2f})"


def main() -> int:
    import changepoints_accuracy as accuracy
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--history", type=int, help="commits before the step (default: 50, or the most the "
                        "recordings hold at --per-commit)")
    parser.add_argument("--per-commit", type=int, help="repetitions per commit, their median (default: "
                        "perflab's, RunOptions.repetitions: as the robot measures a commit)")
    parser.add_argument("--explain", action="store_true",
                        help="list every false alert outside the labels: size, length, neighbours, memory")
    parser.add_argument("--sets", nargs="+", default=list(SETS), metavar="NAME",
                        help="recording sets under bench/data (default: the three)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--scale", choices=("sd", "robust", "both"), default="both",
                        help="a step's sd: the history's sd, the recording's robust sd, or each in turn")
    parser.add_argument("--false-rate", nargs="+", type=float, metavar="PER_1000",
                        help="the detector's stated false-alarm rate per 1,000 looks (default: tip's "
                        "FALSE_RATE_PER_1000); several: one trade-off row each, latency against false alerts")
    parser.add_argument("--rule", default="code", help="the look: the code's, or a candidate of bench/tip_null.py "
                        "(its RULES) put in tip.look's place")
    args = parser.parse_args()
    from perflab.model.run_request import RunOptions
    from perflab.stats import tip
    if args.rule != "code":
        import tip_null
        if args.rule not in tip_null.RULES:
            raise SystemExit(f"--rule {args.rule}: one of {', '.join(tip_null.RULES)}")
        tip.look = tip_null.RULES[args.rule]
    args.false_rate = args.false_rate or [tip.FALSE_RATE_PER_1000]
    if not all(0 < r < 1000 for r in args.false_rate):
        raise SystemExit(f"--false-rate {args.false_rate}: each rate lies in (0, 1000) per 1,000 looks")
    args.per_commit = args.per_commit or RunOptions().repetitions
    loaded = {f"{s}/{name}": x for s in args.sets for name, x in accuracy.load_noise(ROOT / "data" / s).items()}
    raw = list(loaded.values())
    shortest = min(x.size for x in raw) // args.per_commit
    args.history = args.history or min(50, shortest - AFTER - 1)
    if args.history + AFTER >= shortest:
        raise SystemExit(f"--history {args.history}: the recordings hold {shortest} commits of "
                         f"{args.per_commit} repetitions, at most {shortest - AFTER - 1} before the step's {AFTER}")
    noises = [accuracy.residuals(commits(x, args.per_commit)) for x in raw]
    print(f"one commit = the median of {args.per_commit} repetition(s)")
    if len(args.false_rate) > 1:
        trade_off(noises, args, args.false_rate)
        return 0
    rng = np.random.default_rng(args.seed)
    rate = args.false_rate[0]
    for scale in ("sd", "robust") if args.scale == "both" and args.trials else (args.scale,) * bool(args.trials):
        latency(noises, args.history, args.trials, rng, scale, rate)
    if args.trials:
        oracle(noises)
    if args.trials and args.explain:
        misses(noises, list(loaded), args.history, rate)
    report_false_alerts(args.sets, args.per_commit, args.explain, rate)
    return 0


def trade_off(noises: list[np.ndarray], args: argparse.Namespace, rates: list[float]) -> None:
    """One row per stated false-alarm rate of the detector: the latency shares (steps in the
    history's sds; the same series for every rate: one seed) and the false alerts pooled over
    the sets with their one-sided 95% Poisson bounds."""
    print(f"trade-off over the detector's stated rate: {args.trials} series per step, history {args.history} "
          f"commits, steps in the history's sds; false alerts outside the labels of {', '.join(args.sets)}")
    print(f"{'rate/1000':>9}{'4σ sus<=2':>10}{'4σ con<=5':>10}{'3σ con<=5':>10}{'5σ sus<=2':>10}"
          f"{'looks':>7}  {'false suspect /1000':<22}{'false confirmed /1000':<22}")
    for rate in rates:
        shares = latency_series(noises, args.history, args.trials, np.random.default_rng(args.seed), "sd", rate)

        def share(d: float, state: int, within: int, shares: dict = shares) -> str:
            return f"{np.mean(np.array(shares[d][state]) <= within):.0%}"
        looks, counts = 0, {"suspect": 0, "confirmed": 0}
        for s in args.sets:
            n, out, _ = false_alerts(ROOT / "data" / s, args.per_commit, rate)
            looks, counts = looks + n, {k: counts[k] + out[k] for k in counts}
        print(f"{rate:>9g}{share(4.0, 0, 2):>10}{share(4.0, 1, 5):>10}{share(3.0, 1, 5):>10}{share(5.0, 0, 2):>10}"
              f"{looks:>7}  {per_1000(counts['suspect'], looks):<22}{per_1000(counts['confirmed'], looks):<22}")


if __name__ == "__main__":
    sys.exit(main())
