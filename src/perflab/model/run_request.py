"""RunRequest: the typed, versioned document of what a run does.

It is what `perflab run`, `ab`, `calibrate`, a fleet job and bisect hand to the record
service (execute/record.py), and what the store keeps as the run's spec: the request as
asked (target, sweep text, options, stop rule, identity, exports), the plans it resolved
to (enough to ``--resume``) and how it ended (``stopped``, an A/B's decision). Read a
stored spec only through :meth:`RunRequest.from_json`; it migrates older documents.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.exact_decode import decode
from perflab.model.json_types import JsonObject
from perflab.model.limits import check_count, check_number, check_repetitions

SCHEMA_VERSION = 2
MAX_SETTLE_S = 60.0   # a pause longer than a minute is a mistyped option, not settling
# the monitors' options, their one home (MonitorOptions' defaults and checks, the CLI's choices):
PROFILE_FREQ_HZ = 800   # lkp-tests' perf-profile default: comparable with robot reports, cheap
PROFILE_FREQ_MAX_HZ = 1_000_000
CALL_GRAPHS = ("fp", "dwarf")          # unwinding; the first is the default
PROFILE_SCOPES = ("system", "process")  # every CPU, or the benchmark's processes; the first is the default


def draw_seed() -> int:
    """The one place a run's shuffle seed is drawn (recorded, so a resume replays the order)."""
    return random.SystemRandom().randrange(2**31)


@dataclass(frozen=True, kw_only=True)
class MonitorOptions:
    """What the monitors of a run are told (execute/monitors take it as is): which watch each
    measured sample and how. A RunOptions is one, beside the rest of a run's options."""

    cpus: list[int] | None = None      # --cpu: the benchmark's CPUs; system-wide perf watches only those
    monitors: list[str] | None = None  # watch each measured sample (execute/monitors)
    events: list[str] | None = None    # perf-stat's events; None: its default choice
    profile_freq: int = PROFILE_FREQ_HZ
    call_graph: str = CALL_GRAPHS[0]
    profile_scope: str = PROFILE_SCOPES[0]

    def __post_init__(self) -> None:
        # the CLI's click choices say the same first; a fleet job's request meets these
        check_count(self.profile_freq, "--profile-freq", most=PROFILE_FREQ_MAX_HZ)
        if self.call_graph not in CALL_GRAPHS:
            raise UsageError(f"--call-graph {self.call_graph!r}: choose {' or '.join(CALL_GRAPHS)}")
        if self.profile_scope not in PROFILE_SCOPES:
            raise UsageError(f"--profile-scope {self.profile_scope!r}: choose {' or '.join(PROFILE_SCOPES)}")


@dataclass(frozen=True, kw_only=True)
class RunOptions(MonitorOptions):
    """How each sample of a plan is taken. With ``shuffle`` and no ``seed`` one is drawn here."""

    repetitions: int = 10
    warmup: int = 0
    shuffle: bool = False
    seed: int | None = None
    timeout: float | None = None
    prepare: str | None = None
    conclude: str | None = None        # hyperfine's --conclude: a shell line after every sample
    setup: str | None = None
    cleanup: str | None = None
    show_output: bool = False
    metrics: list[str] | None = None   # keep only these (a suite's choice); None keeps all
    force: bool = False                # run a sweep above params.MAX_POINTS
    settle: float | None = None        # idle seconds before the first sample; None: execute/settle's rule

    def __post_init__(self) -> None:
        # the limits of docs/limits.md, for a request made without the CLI (a fleet job, a
        # suite file): a count beyond them is refused before any plan is built
        check_repetitions(self.repetitions)
        check_count(self.warmup, "warm-ups (-w)", least=0)
        if self.settle is not None:
            check_number(self.settle, "--settle", least=0, most=MAX_SETTLE_S)
        super().__post_init__()
        if self.shuffle and self.seed is None:
            object.__setattr__(self, "seed", draw_seed())


@dataclass(frozen=True, kw_only=True)
class Target:
    """What to run, as given: words (a command, a workload's name, a suite file) or -c lines."""

    words: tuple[str, ...] = ()
    after_dashdash: bool = False          # words after ``--`` are always one command
    commands: tuple[str, ...] = ()        # -c/--command, each a command line
    command_names: tuple[str, ...] = ()   # --command-name, one per command
    name: str | None = None               # --name of a single command
    shell: str | bool | None = None       # True: /bin/sh; a name or path: that shell
    ignore_failure: bool = False
    duration: float | None = None         # a built-in workload's sample duration


@dataclass(frozen=True, kw_only=True)
class SweepText:
    """The sweep as written (-p, -L, -P, -D): parsed where the run happens (machine variables)."""

    params: tuple[str, ...] = ()
    lists: tuple[tuple[str, str], ...] = ()
    scans: tuple[tuple[str, str, str], ...] = ()
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class StopSpec:
    """When a run may end before its repetitions: at a round end after ``max_time_s``."""

    max_time_s: float | None = None
    min_rounds: int = 1

    def __post_init__(self) -> None:
        check_count(self.min_rounds, "-m/--min-runs")


@dataclass(frozen=True, kw_only=True)
class AbSettings:
    """What `perflab ab` was asked: the sequential test's threshold, error rate and limits."""

    threshold_pct: float
    alpha: float = 0.05
    min_runs: int = 5
    max_runs: int = 200
    max_time_s: float | None = None
    lower_is_better: bool = True
    metric: str = "time"    # the command metric the test decides on (time, user, system)

    def __post_init__(self) -> None:
        check_count(self.min_runs, "-m/--min-runs")
        check_count(self.max_runs, "-M/--max-runs")


@dataclass(frozen=True, kw_only=True)
class AbDecision:
    verdict: str | None
    n: int
    estimate_pct: float              # the change, % with + = better (model.verdicts.SIGN)
    ci_pct: tuple[float, float]      # its interval, the same way
    alpha: float
    reason: str


@dataclass(frozen=True, kw_only=True)
class AbRecord:
    settings: AbSettings
    decision: AbDecision | None = None


@dataclass(frozen=True, kw_only=True)
class Identity:
    """What the run is recorded as. ``label`` None: the kernel release, chosen at record time."""

    label: str | None = None
    commit: str | None = None
    describe: str | None = None
    repo: str | None = None               # absolute path of the git repository
    job_id: int | None = None             # the fleet job the run is for
    command_line: tuple[str, ...] | None = None   # the perflab command line, to reproduce it
    build: str | None = None              # the shell line that built the measured tree (bisect's --build)


#: hyperfine-format files written after the run: a format of formats.hyperfine_export.EXPORTS ->
#: its file, only those asked (the registry's names, so a new format needs nothing here)
Exports = dict[str, str]


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How compare lays out a plan's rows (a suite may name its own)."""

    benchmark: str
    title: str | None = None
    row: str | None = None


@dataclass(frozen=True, kw_only=True)
class PlanRecord:
    """One resolved plan: the workload's own spec (workloads.registry.from_spec reads it),
    its sweep, options and measured shell start-up (wall, user, system)."""

    workload: dict[str, object]   # the workload's own JSON (not JsonObject: decoded, see exact_decode)
    sweep: dict[str, list[Any]]
    options: RunOptions
    shell_overhead: tuple[float, float, float] | None = None
    layout: Layout | None = None
    monitor_overhead: dict[str, str] = field(default_factory=dict)

    @property
    def benchmark(self) -> str:
        return str(self.workload.get("benchmark") or self.workload.get("workload", "?"))


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """Why and when a run ended before its repetitions."""

    reason: str
    rounds: int
    elapsed_s: float
    at: float


@dataclass(frozen=True, kw_only=True)
class Imported:
    """The file an imported run came from."""

    kind: str
    file: str | None = None
    sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What a run does (everything `perflab run` and `ab` take), what it resolved to and how
    it ended. Build one, hand it to ``execute.record.record``; store it with ``to_json``."""

    target: Target | None = None
    sweep: SweepText = SweepText()
    repetitions: int | None = None        # None: 10, or the suite's
    options: RunOptions = RunOptions()
    limits: StopSpec = StopSpec()
    ab: AbRecord | None = None
    identity: Identity = Identity()
    exports: Exports = field(default_factory=dict)
    plans: tuple[PlanRecord, ...] = ()    # filled when recorded
    interleaved: bool = False
    stopped: Stopped | None = None
    imported: Imported | None = None
    version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.repetitions is not None:
            check_repetitions(self.repetitions)

    def to_json(self) -> JsonObject:
        return asdict(replace(self, version=SCHEMA_VERSION))

    @classmethod
    def from_json(cls, document: JsonObject) -> RunRequest:
        """A stored spec, of any version, as a RunRequest (pydantic checks its types where
        they are not exactly the declared ones: model/exact_decode.py)."""
        migrated = _asked_exports(migrate(dict(document)))
        request: RunRequest | None = decode(cls, migrated)
        return request if request is not None else _adapter().validate_python(migrated)

    @property
    def benchmarks(self) -> list[str]:
        return [p.benchmark for p in self.plans]

    def resumable(self) -> bool:
        return bool(self.plans)


def migrate(document: JsonObject) -> JsonObject:
    """A version-less spec (perflab before RunRequest: ``asdict(RunOptions)`` plans beside
    ``command_line``, ``limits``, ``ab``, ``stopped``, or an import's ``imported`` and
    ``file``) in this version's shape."""
    version = document.get("version", 1)
    if not isinstance(version, int) or version >= SCHEMA_VERSION:
        return document   # this version's shape, or no RunRequest at all: validation says which
    out: JsonObject = {"version": SCHEMA_VERSION}
    for key in ("plans", "interleaved", "limits", "ab", "stopped"):
        if document.get(key) is not None:
            out[key] = document[key]
    if document.get("command_line"):
        out["identity"] = {"command_line": document["command_line"]}
    if isinstance(document.get("imported"), str):
        out["imported"] = {"kind": document["imported"], "file": document.get("file"),
                           "sha256": document.get("sha256")}
    return out


def _asked_exports(document: JsonObject) -> JsonObject:
    """Version 2 wrote every export format's key, None where not asked: only the asked stay."""
    exports = document.get("exports")
    if isinstance(exports, dict) and None in exports.values():
        document = {**document, "exports": {name: path for name, path in exports.items() if path is not None}}
    return document


@cache
def _adapter() -> Any:
    from pydantic import TypeAdapter  # slow to import: only where a stored spec is read
    return TypeAdapter(RunRequest)
