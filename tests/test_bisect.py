"""perflab bisect and perflab verdict on a real git history of a small C program.

The repository is made by the test with git fast-import: 200 commits of a loop whose
commit 137 does 5% more work; commit 100 breaks the build and 149 exits with an error
(both must be skipped and named). Every run draws injected noise (2% sd plus 5% slow
outliers of +10..50%) from a per-trial seeded stream: it loops WORK x noise times and
prints that count, "work: N".

The ten seeded trials bisect that printed figure, so their noise is the injected one and
the seeds mean something: on this 2-vCPU VM the CPU time of a 17 ms run has its own 7% to
30% noise (it changes by the hour) and drifts within seconds, which would swamp the seeds
(at 15% a 5% step takes ~270 paired runs per step). Bisecting by CPU time is shown on a
30% step (test_bisect_by_cpu_time_finds_a_large_step).
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import perflab_shell, run_cli

BAD_INDEX = 137
PROGRAM = r'''#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <math.h>
/* revision %(rev)d */
#define WORK %(work)dUL

static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state) { return (mix((*state)++) >> 11) * 0x1.0p-53; }

/* Injected noise: extra work drawn from a seeded stream, one draw per run. */
static double noise_factor(void) {
    const char *path = getenv("BISECT_NOISE_FILE");
    if (!path) return 1.0;
    unsigned long long seed = 0, count = 0;
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%%llu %%llu", &seed, &count) != 2) count = 0; fclose(f); }
    f = fopen(path, "w");
    if (f) { fprintf(f, "%%llu %%llu\n", seed, count + 1); fclose(f); }
    uint64_t state = mix(seed * 1000003ULL + count);
    double u1 = uniform(&state), u2 = uniform(&state), u3 = uniform(&state);
    double z = sqrt(-2.0 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2);
    double factor = 1.0 + %(sd)s * z;
    if (u3 < %(outlier_rate)s) factor += 0.1 + 0.4 * uniform(&state);  /* a slow outlier */
    return factor < 0.5 ? 0.5 : factor;
}

int main(void) {
    volatile unsigned long x = 0;
    unsigned long n = (unsigned long)(WORK * noise_factor());
    for (unsigned long i = 0; i < n; i++) x += i * i;
    printf("work: %%lu\n", n);
    %(exit)s
}
'''


def fast_import_stream(commits: int, work: int, bad_index: int, step: float, broken_build: set[int],
                       broken_run: set[int], sd: str, outlier_rate: str) -> bytes:
    out = []
    t0 = 1700000000
    for rev in range(commits):
        w = int(work * step) if rev >= bad_index else work
        src = PROGRAM % dict(rev=rev, work=w, sd=sd, outlier_rate=outlier_rate,
                             exit="return 3;" if rev in broken_run else "return 0;")
        if rev in broken_build:
            src = src.replace("int main(void) {", "int main(void) { syntax error here")
        subject = (f"Do {round(100 * (step - 1))}% more work in the loop" if rev == bad_index else
                   "Break the build" if rev in broken_build else
                   "Exit with an error" if rev in broken_run else f"Change {rev}")
        data = src.encode()
        makefile = b"prog: prog.c\n\tcc -O1 -o prog prog.c -lm\n"
        msg = subject.encode()
        out.append(b"commit refs/heads/main\n")
        out.append(b"committer T <t@example.com> %d +0000\n" % (t0 + rev))
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        out.append(b"M 100644 inline prog.c\ndata %d\n%s\n" % (len(data), data))
        out.append(b"M 100644 inline Makefile\ndata %d\n%s\n" % (len(makefile), makefile))
    return b"".join(out)


def make_repo(path: str, commits: int = 200, work: int = 2_000_000, bad_index: int = BAD_INDEX,
              step: float = 1.05, broken_build=(100,), broken_run=(149,), sd: str = "0.02",
              outlier_rate: str = "0.05") -> None:
    """A git repository at `path` of `commits` commits; commit `bad_index` multiplies the work by `step`."""
    subprocess.run(["git", "init", "-q", "-b", "main", path], check=True)
    stream = fast_import_stream(commits, work, bad_index, step, set(broken_build), set(broken_run), sd,
                                outlier_rate)
    subprocess.run(["git", "-C", path, "fast-import", "--quiet"], input=stream, check=True)
    subprocess.run(["git", "-C", path, "checkout", "-q", "main"], check=True)


WORK_METRIC = ["--metric-regex", r"work: ([0-9]+)"]
# the repo fixture is one git fast-import; the tests are long: spread them over the xdist workers
pytestmark = pytest.mark.spread


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    """bisect stores its runs: in a store of the test's own (the default under XDG_DATA_HOME)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("bisect") / "repo")
    make_repo(path)
    return path


def _sha(repo: str, ref: str) -> str:
    return subprocess.run(["git", "-C", repo, "rev-parse", ref], capture_output=True, text=True,
                          check=True).stdout.strip()


def _bisect(repo: str, *extra: str, env: dict | None = None, timeout: float = 300):
    return run_cli("bisect", "--repo", repo, "--good", "main~199", "--bad", "main", "--build", "make -s",
                   *extra, env=env, timeout=timeout)


@pytest.mark.long   # minutes: started early (tests/scheduling.py)
def test_bisect_names_the_commit_in_9_of_10_noisy_trials(repo, tmp_path):
    expected = _sha(repo, f"main~{199 - BAD_INDEX}")
    found, runs = 0, []
    for seed in range(10):
        noise = tmp_path / f"noise{seed}"
        noise.write_text(f"{seed + 1} 0\n")
        result = _bisect(repo, "--run", "./prog", *WORK_METRIC, "--seed", str(seed), "-q",
                         env={"BISECT_NOISE_FILE": str(noise)})
        assert result.returncode in (0, 1), result.stderr
        first = re.search(r"first higher commit \(a regression\): ([0-9a-f]{12})", result.stdout)
        right = bool(first and expected.startswith(first.group(1)))
        found += right
        runs.append(int(re.search(r"(\d+) benchmark runs", result.stdout).group(1)))
        print(f"trial {seed}: {'found' if right else 'MISSED'}, {runs[-1]} runs")
    print(f"found in {found} of 10 trials; runs per trial {runs}")
    assert found >= 9, f"found the 5% commit in only {found} of 10 trials"


def test_bisect_by_cpu_time_finds_a_large_step(tmp_path):
    # Timed for real, in pairs: 60 commits, commit 41 does 30% more work (the 5% step of the
    # seeded trials is below what this VM's timing noise lets a test afford, see the module doc);
    # ~18 ms of CPU a run, so tick-granular accounting and cache refills under load stay small.
    path = str(tmp_path / "repo")
    make_repo(path, commits=60, work=30_000_000, bad_index=41, step=1.3, broken_build=(), broken_run=(),
              outlier_rate="0")
    result = run_cli("bisect", "--repo", path, "--good", "main~59", "--bad", "main", "--build", "make -s",
                     "--run", "./prog", "--metric", "cpu", "-q", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"first slower commit (a regression): {_sha(path, 'main~18')[:12]}" in result.stdout, result.stdout
    assert "Do 30% more work in the loop" in result.stdout and "mean ±sd (ms)" in result.stdout


def test_bisect_result_shows_evidence_skips_and_cost(repo):
    # Without BISECT_NOISE_FILE the work printed is exact, so the path is fixed:
    # 99 good, 149 skipped (its run exits 3), its neighbour 148 bad, ...
    result = _bisect(repo, "--run", "./prog", *WORK_METRIC, "--seed", "1")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert f"first higher commit (a regression): {_sha(repo, f'main~{199 - BAD_INDEX}')[:12]}" in out
    assert "step  commit" in out and "confidence" in out and "benchmark runs" in out
    # paired estimates vs good, positive = better: 5% more work is -5%
    assert "Change 99" in out and "+0.00%" in out and "-5.00%" in out and "vs good (+ = better)" in out
    assert "99% confidence for the result" in out and "0.00125" in out  # 0.01 over 8 steps
    assert "order in a pair seeded 1" in out
    assert re.search(r"Exit with an error +0 +- +skip", out), out
    assert "skipped:\n" in out and "Exit with an error: run failed (exit 3: work: 2100000)" in out
    assert "perflab: ends after 10 pairs each" in result.stderr  # progress goes to stderr
    assert subprocess.run(["git", "-C", repo, "worktree", "list"], capture_output=True,
                          text=True).stdout.count("\n") == 1  # the temporary worktrees are gone
    assert subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""


def test_a_bisects_suggested_compare_gives_its_verdict(tmp_path):
    """The runs a bisect stored were measured in interleaved pairs: the compare it suggests
    reads them as those pairs and calls the step the bisect called (not "undecided" as two
    separate runs on a host that knows nothing of its run-to-run spread)."""
    path = str(tmp_path / "repo")
    make_repo(path, commits=24, bad_index=17, step=2.0, broken_build=(), broken_run=(), outlier_rate="0")
    noise = tmp_path / "noise"
    noise.write_text("3 0\n")
    result = run_cli("bisect", "--repo", path, "--good", "main~23", "--bad", "main", "--build", "make -s",
                     "--run", "./prog", *WORK_METRIC, "--seed", "2", env={"BISECT_NOISE_FILE": str(noise)})
    assert result.returncode == 0 and "first higher commit (a regression)" in result.stdout, \
        result.stdout + result.stderr
    good, found = re.search(r"'perflab compare (\d+) (\d+)'", result.stdout).groups()
    shown = run_cli("compare", good, found, "--format", "json", check=True)
    [row] = __import__("json").loads(shown.stdout)["rows"]
    comparison = row["candidates"][0]["comparison"]
    assert comparison["verdict"] == "regression" and comparison["change_pct"] < -80, comparison
    assert "interleaved pairs by one bisect" in shown.stdout
    gate = run_cli("compare", good, found, "--fail-on", "regression", "--threshold", "50%")
    assert gate.returncode == 1, gate.stdout + gate.stderr


def test_build_always_failing_cannot_decide(repo):
    result = run_cli("bisect", "--repo", repo, "--good", "main~199", "--bad", "main",
                     "--build", "echo 'no compiler here' >&2; exit 1", "--run", "./prog")
    assert result.returncode == 1
    assert "could not decide" in result.stdout and "build failed (exit 1: no compiler here)" in result.stdout


def test_run_always_failing_cannot_decide(repo):
    result = _bisect(repo, "--run", "./prog && false")
    assert result.returncode == 1
    # good or bad, whichever ran first
    assert "could not decide" in result.stdout and "run failed (exit 1: work: 2" in result.stdout


def test_identical_ends_do_not_differ(repo):
    # main~199 and main~150 both do the base amount of work (printed exactly: no noise)
    result = run_cli("bisect", "--repo", repo, "--good", "main~199", "--bad", "main~150",
                     "--build", "make -s", "--run", "./prog", *WORK_METRIC, "-q")
    assert result.returncode == 1, result.stdout
    assert "good and bad do not differ significantly" in result.stdout and "after 160 pairs" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--good", "nosuchcommit", "--bad", "main"], "--good 'nosuchcommit': no such commit"),
    (["--good", "main", "--bad", "deadbeef"], "--bad 'deadbeef': no such commit"),
    (["--good", "main", "--bad", "main"], "--good and --bad are the same commit"),
    (["--good", "main", "--bad", "main~1"], "is not an ancestor of --bad"),
    (["--good", "main~3", "--bad", "main", "--min-runs", "5", "--max-runs", "2"], "--min-runs"),
    (["--good", "main~3", "--bad", "main", "--confidence", "1.5"], "--confidence"),
    (["--good", "main~3", "--bad", "main", "--metric-regex", "("], "bad --metric-regex"),
])
def test_malformed_bisect_input_is_one_line_and_exit_2(repo, args, message):
    result = run_cli("bisect", "--repo", repo, *args, "--build", "make -s", "--run", "./prog")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_not_a_repository_is_usage(tmp_path):
    for repo in (str(tmp_path), str(tmp_path / "missing")):
        result = run_cli("bisect", "--repo", repo, "--good", "a", "--bad", "b", "--build", "true", "--run", "true")
        assert result.returncode == 2
        assert "not a git repository" in result.stderr or "no such directory" in result.stderr


# -- verdict -----------------------------------------------------------------------------------
def _record(db: str, label: str, command: str, n: int = 8) -> None:
    # no shell: a line as short as the shell's own start-up has nothing left to time
    run_cli("run", "-q", "-n", str(n), "--label", label, "--", *command.split(), db=db, check=True)


def _import(db: str, tmp_path, label: str, times: list[float]) -> None:
    import json
    path = tmp_path / f"{label}.json"
    path.write_text(json.dumps({"results": [{"command": "./tool", "mean": sum(times) / len(times),
                                             "stddev": 0.0, "median": 0.0, "user": 0.0, "system": 0.0,
                                             "min": min(times), "max": max(times), "times": times,
                                             "exit_codes": [0] * len(times)}]}))
    # one machine: its imports of ./tool are replicates of one another (an unknown host's are not)
    run_cli("import", "hyperfine", str(path), "--label", label, "--host", "testbox", db=db, check=True)


# exclusive: its two runs are recorded apart and judged; another worker's test beside one of them is
# a real competing load, and the verdict then rightly says undecided, naming it (accepted as such)
@pytest.mark.exclusive
def test_verdict_exit_codes(sqlite_db, tmp_path):
    _import(sqlite_db, tmp_path, "good", [0.100, 0.101, 0.099, 0.1005, 0.0995, 0.1002])
    _import(sqlite_db, tmp_path, "same", [0.1001, 0.0999, 0.1004, 0.0996, 0.1003, 0.0998])
    like = run_cli("verdict", "good", "same", db=sqlite_db)
    assert like.returncode == 0 and like.stdout.startswith("good:"), like.stdout + like.stderr
    # a real measured regression: 10 ms vs 60 ms of sleep
    _record(sqlite_db, "fast", "sleep 0.01")
    _record(sqlite_db, "slow", "sleep 0.06")
    worse = run_cli("verdict", "fast", "slow", "--metric", "time", db=sqlite_db)
    better = run_cli("verdict", "slow", "fast", db=sqlite_db)
    # both runs named, by label or by commit
    assert "(fast" in worse.stdout and "(slow" in worse.stdout
    assert len(worse.stdout.strip().splitlines()) == 1
    if _load_named(worse) or _load_named(better):
        return   # recorded beside a load it measured on this shared machine: the honest undecided
    assert worse.returncode == 1 and worse.stdout.startswith("bad:") and "time" in worse.stdout, worse.stdout
    assert better.returncode == 0, better.stdout


def _load_named(result) -> bool:
    """An undecided verdict (125) that names the competing load it measured."""
    return result.returncode == 125 and result.stdout.startswith("undecided:") and "another load" in result.stdout


def test_verdict_never_passes_what_it_cannot_decide(sqlite_db, tmp_path):
    """3 vs 3 with a 3x regression: Mann-Whitney's smallest p is 0.1, so the test cannot
    call it bad, and it must not call it good either: 125 (skip), naming what is missing.
    The host knows ./tool's run-to-run spread (three runs under one label, as 'perflab
    calibrate' records them): with nothing known, perflab's wide default prior would leave
    even a 3x change undecided, and this test is about what the sample sizes allow."""
    for level in (0.0100, 0.01008, 0.00995):
        _import(sqlite_db, tmp_path, "calibrate", [level, level * 1.01, level * 0.99])
    _import(sqlite_db, tmp_path, "three", [0.0100, 0.0101, 0.0102])
    _import(sqlite_db, tmp_path, "slower", [0.0300, 0.0302, 0.0305])
    result = run_cli("verdict", "three", "slower", db=sqlite_db)
    assert result.returncode == 125 and result.stdout.startswith("undecided:"), result.stdout + result.stderr
    assert "3 vs 3 samples cannot reach p < 0.05" in result.stdout and "--method welch-log" in result.stdout
    # Welch on logs can decide it
    welch = run_cli("verdict", "three", "slower", "--method", "welch-log", db=sqlite_db)
    assert welch.returncode == 1 and welch.stdout.startswith("bad:"), welch.stdout + welch.stderr
    assert "from replicate runs, 3 of them" in welch.stderr, welch.stderr
    # a wide interval is undecided at the default threshold, good once the threshold is stated
    _import(sqlite_db, tmp_path, "noisy", [0.0100, 0.0110, 0.0095, 0.0104, 0.0099, 0.0108])
    noisy = run_cli("verdict", "three", "noisy", "--method", "welch-log", db=sqlite_db)
    # the row's noise floor (1%) is the default threshold; run-to-run variance widens the test, not the floor
    assert noisy.returncode == 125 and "does not rule out a regression of 1%" in noisy.stdout, noisy.stdout
    stated = run_cli("verdict", "three", "noisy", "--method", "welch-log", "--threshold", "30%", db=sqlite_db)
    assert stated.returncode == 0 and stated.stdout.startswith("good:"), stated.stdout + stated.stderr


def test_verdict_takes_a_commit(sqlite_db, tmp_path):
    run_cli("run", "-q", "-n", "6", "--label", "nightly", "--commit", "c0ffee04aa", "--", "true", db=sqlite_db)
    run_cli("run", "-q", "-n", "6", "--label", "nightly", "--", "true", db=sqlite_db)
    result = run_cli("verdict", "c0ffee04", "nightly", "--threshold", "1000%", db=sqlite_db)
    assert result.returncode in (0, 125) and "c0ffee04aa" in result.stdout, result.stdout + result.stderr


def test_verdict_skips_a_run_whose_samples_all_failed(sqlite_db):
    _record(sqlite_db, "good", "true")
    run_cli("run", "-q", "-n", "3", "--label", "broken", "--shell", "--", "exit 3", db=sqlite_db)
    result = run_cli("verdict", "good", "broken", db=sqlite_db)
    assert result.returncode == 125 and result.stdout.startswith("skip:"), result.stdout + result.stderr


def test_verdict_usage_errors(sqlite_db):
    _record(sqlite_db, "good", "true", n=3)
    result = run_cli("verdict", "good", "nosuchrun", db=sqlite_db)
    assert result.returncode == 2 and "no run with id or label 'nosuchrun'" in result.stderr
    assert run_cli("verdict", "good", db=sqlite_db).returncode == 2


@pytest.mark.exclusive   # single separate runs of a ~ms program: the other workers' load made its steps undecided
def test_verdict_drives_git_bisect_run(repo, tmp_path, sqlite_db):
    # The documented recipe, end to end, on a 20-commit slice with the step in the middle.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", repo, str(clone)], check=True)
    good, bad = f"main~{199 - 127}", f"main~{199 - 147}"
    perflab = perflab_shell()
    script = tmp_path / "check.sh"
    script.write_text(f"""#!/bin/sh
make -s || exit 125
{perflab} --db {sqlite_db} run -q -n 12 --label cand -- ./prog || exit 125
exec {perflab} --db {sqlite_db} verdict good cand --threshold 100%
""")
    script.chmod(0o755)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", good], check=True)
    subprocess.run(["make", "-s", "-C", str(clone)], check=True)
    # the good end recorded as the recipe records each probe (no shell: under load the shell's
    # measured start-up can reach this 4 ms program's whole time)
    run_cli("run", "-q", "-n", "12", "--label", "good", "--", str(clone / "prog"), db=sqlite_db, check=True)
    subprocess.run(["git", "-C", str(clone), "bisect", "start", bad, good], check=True, capture_output=True)
    out = subprocess.run(["git", "-C", str(clone), "bisect", "run", str(script)], capture_output=True,
                         text=True, timeout=300, cwd=clone)
    # Wall time of a 15 ms program on a shared machine: the recipe must run to the end with
    # one good:/bad: line per step; which commit it names is up to the noise. Under another
    # load that verdict measured and names, a step is undecided and git skips it (exit 125):
    # git then ends among the skipped commits, the honest end of that bisect.
    lines = out.stdout.splitlines()
    steps = [line for line in lines if line.startswith(("good: ", "bad: ", "undecided: "))]
    assert len(steps) >= 4, out.stdout[-2000:]
    assert all("another load" in line for line in steps if line.startswith("undecided: ")), out.stdout[-2000:]
    assert "is the first bad commit" in out.stdout or \
        "There are only 'skip'ped commits left to test." in out.stdout, out.stdout[-2000:]
