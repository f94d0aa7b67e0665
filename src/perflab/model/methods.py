"""The statistical methods, by name: change-point detectors and compare tests.

Each entry names a method, says in one line what it does (the CLI's choices and --help, and
tests/test_registries.py's check of docs/methods.md, read it) and where its code is: one
module with one entry point, imported by its dotted path on first use (`stats.methods`), so
a command that detects nothing imports none of them. A detector also names its parameters
type (a frozen dataclass below). To add a method: its module in stats/detectors/ or
stats/compare_tests/, one entry here, its paragraph in docs/methods.md (docs/design.md,
"Registries").
"""

from __future__ import annotations

from dataclasses import dataclass, fields

#: Parameters of perflab changepoints' JSON: name -> value (a number, a criterion or a flag).
Shown = dict[str, float | str | bool]


@dataclass(frozen=True, kw_only=True)
class DetectorParams:
    """What every detector takes: drop changes whose relative size (a fraction: 0.05 = 5%)
    is below ``min_magnitude``."""

    min_magnitude: float = 0.0

    def shown(self) -> Shown:
        """The parameters a report names beside the method (min_magnitude is named apart)."""
        return {}


@dataclass(frozen=True, kw_only=True)
class MosumParams(DetectorParams):
    """mosum: ``false_rate`` expected false points per 1,000 points of noise (the default is
    stats.mosum.FALSE_RATE_PER_1000); segments at least max(min_size, mosum.MIN_SEGMENT)
    long; ``spread``: also changes in the noise's spread alone."""

    false_rate: float = 0.2
    min_size: int = 2
    spread: bool = False

    def shown(self) -> Shown:
        return {"false_alarms_per_1000_points": self.false_rate}


@dataclass(frozen=True, kw_only=True)
class EDivisiveParams(DetectorParams):
    """e-divisive: points per sliding window, and the t-test's level for a point to stay."""

    window: int = 50
    max_pvalue: float = 0.001

    def shown(self) -> Shown:
        return {"window": self.window, "max_pvalue": self.max_pvalue}


@dataclass(frozen=True, kw_only=True)
class PenaltyParams(DetectorParams):
    """pelt and binseg: the penalty per change ("mbic", "bic", "aic" or a factor of the
    noise variance) and the fewest values in a segment."""

    penalty: str | float = "mbic"
    min_size: int = 2

    def shown(self) -> Shown:
        return {"penalty": self.penalty}


@dataclass(frozen=True, kw_only=True)
class DetectSettings:
    """What a user may set for any detector (perflab changepoints' options; None: the
    method's default): each method takes the fields its parameters type has
    (`ChangePointMethod.params_from`)."""

    min_magnitude: float | None = None
    window: int | None = None
    max_pvalue: float | None = None
    penalty: str | float | None = None
    spread: bool = False


@dataclass(frozen=True, kw_only=True)
class ChangePointMethod:
    """A change-point detector: ``home`` is "module:function", the function
    ``(stats.detectors.points.Values, params) -> list[ChangePoint]``. ``commit_search``:
    on a commit series the method is commit_series' own search (mosum's) at its false-alarm
    rate, where the others' points are candidates for it."""

    name: str
    help: str
    params: type[DetectorParams]
    home: str
    commit_search: bool = False

    def params_from(self, settings: DetectSettings) -> DetectorParams:
        """This method's parameters, those a user may set taken from ``settings``."""
        own = {f.name for f in fields(self.params)}
        given = {f.name: getattr(settings, f.name) for f in fields(settings)}
        return self.params(**{name: value for name, value in given.items() if name in own and value is not None})


#: Every detector, the default first.
CHANGE_POINT_METHODS: tuple[ChangePointMethod, ...] = (
    ChangePointMethod(name="mosum", params=MosumParams, home="perflab.stats.detectors.mosum:find", commit_search=True,
                      help="robust moving sums at windows 8..256: spikes filtered, noise and autocorrelation from "
                           "the series' own lag differences, drift removed, thresholds for a stated false-alarm "
                           "rate (0.2 per 1,000 points); the most accurate on long series "
                           "(bench/changepoints_accuracy.py)"),
    ChangePointMethod(name="e-divisive", params=EDivisiveParams, home="perflab.stats.detectors.e_divisive:find",
                      help="Otava's method: E-divisive means in sliding windows, then a t-test between "
                           "neighbouring segments"),
    ChangePointMethod(name="pelt", params=PenaltyParams, home="perflab.stats.detectors.pelt:find",
                      help="exact penalised least squares for changes in mean (PELT)"),
    ChangePointMethod(name="binseg", params=PenaltyParams, home="perflab.stats.detectors.binseg:find",
                      help="seeded binary segmentation with PELT's penalty, the fastest on long series"),
)
CHANGE_POINT_NAMES = tuple(m.name for m in CHANGE_POINT_METHODS)

#: The default choice: mosum from AUTO_MOSUM_FROM points (e-divisive below, where mosum
#: cannot cut). On real annotated series under 100 points (bench/changepoints_tcpd.py: TCPD,
#: TCPDBench's F1 / covering) it scores 0.785/0.679, where e-divisive (the short-series choice
#: until 2026-11-25) scored 0.704/0.552, below "no change" 0.710/0.603, and cut every short
#: trending series. mosum reports a new regime only once it has lasted 5 points, so the
#: newest commits are read by the tip detector (stats/tip.py: a suspect after 1-2 commits,
#: confirmed when the new level holds), which alerts and watch run behind it.
AUTO_METHOD = "auto"
#: Below this many points mosum cannot place a change (two of its 5-point segments), and
#: `auto` takes e-divisive, whose t-test needs 3 a side (TCPD has no series this short).
AUTO_MOSUM_FROM = 10


def change_point_method(name: str) -> ChangePointMethod:
    """The detector ``name``; ValueError naming the others when there is none."""
    for method in CHANGE_POINT_METHODS:
        if method.name == name:
            return method
    raise ValueError(f"unknown method {name!r}: one of {', '.join(CHANGE_POINT_NAMES)}")


def resolve_method(method: str, points: int) -> str:
    """The detector ``method`` names for a series of ``points`` points."""
    if method != AUTO_METHOD:
        return method
    return "mosum" if points >= AUTO_MOSUM_FROM else "e-divisive"


def method_help(*, auto: bool = True) -> str:
    """The --method help text of the detectors, from the registry."""
    listed = "; ".join(f"{m.name}: {m.help}" for m in CHANGE_POINT_METHODS)
    return (f"Change-point detector (auto: mosum from {AUTO_MOSUM_FROM} points, e-divisive below; alerts and "
            f"watch read the newest "
            f"commits with the tip detector). {listed}." if auto else f"{listed}.")


def method_choices(*, auto: bool = True) -> list[str]:
    """The --method choices of the detectors."""
    return ([AUTO_METHOD] if auto else []) + list(CHANGE_POINT_NAMES)


def takers(parameter: str) -> str:
    """The detectors whose parameters include ``parameter``, "pelt/binseg" (an option's help)."""
    return "/".join(m.name for m in CHANGE_POINT_METHODS if parameter in {f.name for f in fields(m.params)})


@dataclass(frozen=True, kw_only=True)
class CompareTest:
    """A test or rule of one comparison row: ``title`` is the name reports print, ``home``
    "module:function", the function ``(stats.compare_tests.row.Sides) -> Outcome``.
    ``run_unit``: with separate runs, the run-to-run variance enters the test itself (the
    run is its unit); the others widen the noise floor by it instead."""

    name: str
    title: str
    home: str
    run_unit: bool = False


#: Every compare test, the default first.
COMPARE_TESTS: tuple[CompareTest, ...] = (
    CompareTest(name="welch-log", title="Welch t-test on log values", run_unit=True,
                home="perflab.stats.compare_tests.welch_log:test"),
    CompareTest(name="mann-whitney", title="Mann-Whitney U test", home="perflab.stats.compare_tests.mann_whitney:test"),
    CompareTest(name="mmtests", title="mmtests band rule (|Δmean| > 1.96·(sd_base+sd_new))",
                home="perflab.stats.compare_tests.mmtests:test"),
    CompareTest(name="lkp", title="lkp-tests range rule (disjoint ranges, median ratio > 1%)",
                home="perflab.stats.compare_tests.lkp:test"),
)
#: key -> the name reports print, of every compare test
METHOD_NAMES: dict[str, str] = {t.name: t.title for t in COMPARE_TESTS}
DEFAULT_COMPARE_TEST = COMPARE_TESTS[0].name


def compare_test(name: str) -> CompareTest:
    """The compare test ``name``; ValueError naming the others when there is none."""
    for test in COMPARE_TESTS:
        if test.name == name:
            return test
    raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHOD_NAMES)}")
