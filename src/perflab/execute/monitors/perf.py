"""perf-stat and perf-profile: one perf process per sample, switched on and off from here.

perf is started before the spawn with its events disabled (``-D -1``) and a control
pipe (``--control fd:CTL,ACK``); perflab waits for the answer to a ``ping`` (perf is
ready), then sends ``enable`` / ``disable`` and waits for each ``ack``. perf's own
start-up and wind-down thus stay outside what it counts, and outside the sample's clock.

perf-stat counts system-wide (``-a``, or the ``--cpu`` CPUs), as lkp's perf-stat does.
perf-profile records with call graphs, system-wide by default (lkp's perf-profile), or
only the benchmark's processes (``process`` scope: recorded system-wide, then samples
outside the benchmark's process tree, followed through fork events, are dropped, so
nothing has to attach to the benchmark after it started). It records a window in the
middle of the sample: 25% to 75% of the expected duration (the previous sample of the
same point, warm-ups included, else the workload's duration + warm-up), and the whole
sample when nothing is known or the sample is expected to last under
``MIN_WINDOW_SAMPLE_S``. ``perf script`` output is streamed through a pipe into
perf_profile.aggregate, one line at a time: memory is per distinct stack, not per sample.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from perflab.execute import perf_profile, probe
from perflab.execute.monitors.base import Monitor, MonitorFailed, MonitorOutput, ProfileRows, SampleInfo, register
from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult
from perflab.model.run_request import MonitorOptions

HARDWARE_EVENTS = ("cycles", "instructions")
SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
READY_TIMEOUT_S = 30.0   # perf record -a with call graphs can take a while to set up
EXIT_TIMEOUT_S = 60.0
MIN_WINDOW_SAMPLE_S = 1.0   # shorter samples are recorded whole (a half window is too few samples)
WINDOW = (0.25, 0.75)
NOISE_FLOOR = 0.05


def _perf_env() -> dict[str, str]:
    """perf's environment: ours as it is when perf starts, in the C locale (its output is parsed)."""
    return {**os.environ, "LC_ALL": "C"}


class PerfSession:
    """One perf process started disabled with a control pipe."""

    def __init__(self, argv: list[str], workdir: Path):
        ctl_read, self._ctl = os.pipe()
        self._ack, ack_write = os.pipe()
        self._stderr = open(workdir / "perf.stderr", "w+b")  # noqa: SIM115  (lives as long as perf; closed in stop)
        argv = [*argv, "--control", f"fd:{ctl_read},{ack_write}", "-D", "-1"]
        try:
            self.process = subprocess.Popen(argv, pass_fds=(ctl_read, ack_write),
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=self._stderr, env=_perf_env(),
                                            start_new_session=True)   # Ctrl-C is ours to send
        except OSError as error:
            self._close_fds()
            raise MonitorFailed(f"cannot run perf: {error.strerror}") from None
        finally:
            os.close(ctl_read)
            os.close(ack_write)
        try:
            self.command("ping", READY_TIMEOUT_S)
        except MonitorFailed:
            self.kill()
            raise

    def command(self, word: str, timeout: float = 10.0) -> None:
        try:
            os.write(self._ctl, word.encode() + b"\n")
            ready, _, _ = select.select([self._ack], [], [], timeout)
            answer = os.read(self._ack, 64) if ready else b""
        except OSError:
            answer = b""
        if not answer.startswith(b"ack"):
            raise MonitorFailed(self._failure(f"perf did not answer {word!r}"))

    def finish(self) -> None:
        """SIGINT (perf writes its results), then wait for it to exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise MonitorFailed(f"perf did not exit within {EXIT_TIMEOUT_S:g} s of SIGINT") from None
        finally:
            self._close_fds()
        if self.process.returncode not in (0, -signal.SIGINT, 130):
            raise MonitorFailed(self._failure(f"perf exited with status {self.process.returncode}"))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close_fds()

    def _failure(self, default: str) -> str:
        if self.process.poll() is None:
            return default
        self._stderr.seek(0)
        return probe.perf_error_reason(self._stderr.read().decode(errors="replace")) or default

    def _close_fds(self) -> None:
        for fd in (self._ctl, self._ack):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._ctl = self._ack = -1
        self._stderr.close()


class PerfMonitor(Monitor):
    """Shared by the two perf monitors: perf found, a scratch directory, one session."""

    def __init__(self, config: MonitorOptions):
        super().__init__(config)
        self.perf = shutil.which("perf")
        self._workdir: Path | None = None
        self._session: PerfSession | None = None

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix=f"perflab-{self.name}-"))
        return self._workdir

    def prepare(self) -> tuple[str | None, list[str]]:
        if self.perf is None:
            return probe.PERF_MISSING, []
        paranoid = _read_int("/proc/sys/kernel/perf_event_paranoid")
        if os.geteuid() != 0 and paranoid is not None and paranoid > 0:
            return (f"counting all CPUs needs root or kernel.perf_event_paranoid <= 0 "
                    f"(it is {paranoid})"), []
        return None, []

    def cpu_args(self) -> list[str]:
        if self.config.cpus:
            return ["-C", ",".join(str(c) for c in self.config.cpus)]
        return ["-a"]

    def abort(self) -> None:
        if self._session is not None:
            self._session.kill()
            self._session = None

    def close(self) -> None:
        self.abort()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


@register
class PerfStatMonitor(PerfMonitor):
    name = "perf-stat"
    description = "perf stat counters, system-wide, over the sample"
    overhead = ("counting on every CPU, without sampling interrupts: small, but inside "
                "these numbers")

    def __init__(self, config: MonitorOptions):
        super().__init__(config)
        self.events: list[str] = []

    def prepare(self) -> tuple[str | None, list[str]]:
        reason, _ = super().prepare()
        if reason:
            return reason, []
        wanted = list(self.config.events) if self.config.events else list(HARDWARE_EVENTS)
        probes = probe.perf_events(wanted)
        rejected = {e: p.reason for e, p in probes.items() if not p.supported}
        supported = [e for e in wanted if probes[e].supported]
        if self.config.events is None:
            if rejected:
                probes = probe.perf_events(list(SOFTWARE_EVENTS))
                self.events = [e for e in SOFTWARE_EVENTS if probes[e].supported]
                if not self.events:
                    return (f"neither {', '.join(HARDWARE_EVENTS)} nor the software events count "
                            f"here: {next(iter(rejected.values()))}"), []
                return None, [f"perf-stat: {', '.join(rejected)} <not supported> on this machine "
                              f"({next(iter(rejected.values()))}); counting "
                              f"{', '.join(self.events)}"]
            self.events = supported
            return None, [f"perf-stat: counting {', '.join(self.events)}"]
        # events the user chose: one perf refuses to parse switches the monitor off
        bad = {e: r for e, r in rejected.items() if r != probe.NOT_SUPPORTED}
        if bad:
            event, reason = next(iter(bad.items()))
            return f"perf rejects event {event!r}: {reason}", []
        if not supported:
            return f"none of {', '.join(wanted)} is supported here ({probe.NOT_SUPPORTED})", []
        self.events = supported
        notes = []
        if rejected:
            notes.append(f"perf-stat: {', '.join(rejected)} <not supported> on this machine; "
                         f"counting {', '.join(supported)}")
        return None, notes

    def start(self, sample: SampleInfo) -> None:
        assert self.perf is not None   # prepare() switched the monitor off without perf
        self._output = self.workdir / "stat.csv"
        argv = [self.perf, "stat", "-x,", *self.cpu_args(), "-e", ",".join(self.events),
                "-o", str(self._output)]
        self._session = PerfSession(argv, self.workdir)

    def begin(self, sample: SampleInfo) -> None:
        assert self._session is not None   # set by start()
        self._session.command("enable")

    def end(self, sample: SampleInfo) -> None:
        assert self._session is not None
        self._session.command("disable")

    def stop(self, sample: SampleInfo, result: ProcessResult) -> MonitorOutput:
        session, self._session = self._session, None
        assert session is not None
        session.finish()
        return MonitorOutput(measurements_from_csv(self._output.read_text(errors="replace")))

    def metric_info(self, metric: str) -> MetricInfo:
        event = metric.removeprefix("perf-stat.")
        unit = "s" if _is_clock(event) else "count"
        return MetricInfo(metric, unit, Direction.LOWER, NOISE_FLOOR,
                          f"perf stat {event}, all CPUs, over the sample")


def measurements_from_csv(text: str) -> list[Measurement]:
    """``perf stat -x,`` rows as perf-stat.* metrics: clocks (msec) in seconds; an event
    perf could not count is left out (its reason was shown once when the run began)."""
    out = []
    for event, (value, _reason) in probe.parse_perf_stat_csv(text).items():
        if value is None:
            continue
        if _is_clock(event):
            out.append(Measurement(f"perf-stat.{event}", value / 1000.0, "s"))
        else:
            out.append(Measurement(f"perf-stat.{event}", value, "count"))
    return out


def _is_clock(event: str) -> bool:
    return event.split(":")[0] in ("task-clock", "cpu-clock")


@register
class PerfProfileMonitor(PerfMonitor):
    name = "perf-profile"
    description = "perf record call graphs: self/children % per symbol, call traces"
    overhead = ("sampling every CPU at {profile_freq} Hz with call graphs: its interrupts are "
                "inside these numbers (perf bench breakpoint's usecs/op measured 7-10% higher "
                "with it at 800 Hz on a 2-CPU VM); compare against runs without --monitor "
                "perf-profile")

    def start(self, sample: SampleInfo) -> None:
        assert self.perf is not None   # prepare() switched the monitor off without perf
        self._data = self.workdir / f"perf-{os.getpid()}.data"
        graph = ["-g"] if self.config.call_graph == "fp" else ["--call-graph", "dwarf"]
        argv = [self.perf, "record", *self.cpu_args(), *graph, "-F", str(self.config.profile_freq),
                "-N", "-q", "-o", str(self._data)]
        self._session = PerfSession(argv, self.workdir)

    def begin(self, sample: SampleInfo) -> None:
        assert self._session is not None   # set by start()
        self._window = _Window(self._session, sample.expected_s)

    def end(self, sample: SampleInfo) -> None:
        self._window.close()

    def stop(self, sample: SampleInfo, result: ProcessResult) -> MonitorOutput:
        session, self._session = self._session, None
        assert session is not None and self.perf is not None
        session.finish()
        root = result.pid if self.config.profile_scope == "process" else None
        # system-wide, perflab's own frames (its wait, the window thread) are not the benchmark's
        profile = profile_of(self.perf, self._data, root, exclude_pid=os.getpid())
        output = MonitorOutput(artifacts=[("perf.data", self._data)])
        if profile.total_samples:
            output.profiles.append(rows_of(profile))
        return output

    def metric_info(self, metric: str) -> MetricInfo:  # perf-profile stores rows, not metrics
        return MetricInfo(metric, "%", Direction.LOWER, NOISE_FLOOR)


class _Window:
    """Enables the recording for the middle of the sample (see the module doc), from a
    thread that sleeps meanwhile; the main thread is blocked in wait4 and gives it the GIL."""

    def __init__(self, session: PerfSession, expected_s: float | None):
        self._session = session
        self._done = threading.Event()
        self._error: MonitorFailed | None = None
        self._enabled = False
        self._thread = None
        if expected_s is None or expected_s < MIN_WINDOW_SAMPLE_S:
            session.command("enable")
            self._enabled = True
            return
        begin, end = (expected_s * f for f in WINDOW)
        self._thread = threading.Thread(target=self._run, args=(begin, end), daemon=True)
        self._thread.start()

    def _run(self, begin: float, end: float) -> None:
        try:
            if self._done.wait(begin):
                return
            self._session.command("enable")
            self._enabled = True
            self._done.wait(end - begin)
        except MonitorFailed as error:
            self._error = error

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        if self._enabled:
            self._session.command("disable")


def profile_of(perf: str, data: Path, root_pid: int | None,
               exclude_pid: int | None = None) -> perf_profile.Profile:
    """``perf script`` of ``data`` streamed into aggregate; with ``root_pid``, only the
    samples of that process and its descendants; with ``exclude_pid``, none of that
    process's own samples (perflab's)."""
    argv = [perf, "script", "-i", str(data)]
    if root_pid is not None:
        argv += ["-F", "+pid", "--show-task-events"]
    elif exclude_pid is not None:
        argv += ["-F", "+pid"]
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr,
                                   stdin=subprocess.DEVNULL, env=_perf_env(),
                                   text=True, errors="replace", bufsize=1 << 16)
        assert process.stdout is not None   # stdout=PIPE
        try:
            lines: Iterable[str] = process.stdout
            if root_pid is not None:
                lines = only_process_tree(lines, root_pid)
            elif exclude_pid is not None:
                lines = without_process(lines, exclude_pid)
            profile = perf_profile.aggregate(lines)
        except perf_profile.PerfScriptError as error:
            process.kill()
            raise MonitorFailed(f"unreadable perf script output: {error}") from None
        finally:
            process.stdout.close()
            process.wait()
        if process.returncode != 0 and not profile.total_samples:
            stderr.seek(0)
            reason = stderr.read().decode(errors="replace").strip().splitlines()
            raise MonitorFailed(f"perf script failed: {reason[-1] if reason else process.returncode}")
    return profile


_PID_TID = re.compile(r"^(\d+)/\d+$")
_FORK = re.compile(r"PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")


def _samples_of(lines: Iterable[str], keeps: Callable[[int | None], bool],
                tree: set[int] | None = None) -> Iterator[str]:
    """The samples (header + frame lines) whose process ``keeps`` accepts, from
    ``perf script -F +pid``; with ``tree``, fork task events add the children of its
    processes to it (and, like every task event, are consumed here)."""
    keep = False
    for line in lines:
        if line.startswith("\t"):
            if keep:
                yield line
            continue
        if not line.strip():
            if keep:
                yield line
            keep = False
            continue
        if "PERF_RECORD_" in line:
            fork = _FORK.search(line) if tree is not None else None
            if fork and tree is not None and int(fork.group(2)) in tree:
                tree.add(int(fork.group(1)))
            keep = False
            continue
        owner = next((int(m.group(1)) for m in map(_PID_TID.match, line.split()[:4]) if m), None)
        keep = keeps(owner)
        if keep:
            yield line


def only_process_tree(lines: Iterable[str], root_pid: int) -> Iterator[str]:
    """The samples of ``root_pid`` and the processes it forked, from
    ``perf script -F +pid --show-task-events``."""
    tree = {root_pid}
    return _samples_of(lines, lambda owner: owner in tree, tree)


def without_process(lines: Iterable[str], pid: int) -> Iterator[str]:
    """The samples of every process but ``pid`` (all its threads), from ``perf script -F +pid``."""
    return _samples_of(lines, lambda owner: owner != pid)


def rows_of(profile: perf_profile.Profile) -> ProfileRows:
    """A Profile as store.profiles.add rows (event without perf's modifiers: cpu-clock)."""
    event = profile.events[0].split(":")[0] if profile.events else "unknown"
    names = set(profile.self_percent) | set(profile.children_percent)
    symbols = [(name, profile.self_percent.get(name, 0.0), profile.children_percent.get(name, 0.0))
               for name in sorted(names)]
    traces = [("calltrace", ";".join(frames), pct)
              for frames, pct in profile.calltrace_percent.items()]
    traces += [("stack", ";".join(frames), float(count)) for frames, count in profile.stacks.items()]
    return ProfileRows(event, symbols, traces)


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None
