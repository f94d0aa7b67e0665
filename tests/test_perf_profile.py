"""perf script -> lkp-style profile rows: real perf, captured fixtures, hand-made lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from perflab.execute.perf_profile import (
    PerfScriptError,
    Profile,
    aggregate,
    folded_lines,
    lkp_stats,
    normalize_symbol,
    parse_file,
)

DATA = Path(__file__).resolve().parent / "data" / "perf_profile"

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
void hot_loop(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += i * 2654435761u ^ (s >> 3);
    sink = s;
}
void warm_loop(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += i * 2654435761u ^ (s >> 3);
    sink = s;
}
int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 10000000UL;
    hot_loop(4 * n);
    warm_loop(n);
    printf("%lu\n", sink);
    return 0;
}
"""


def _check_prog_profile(p: Profile, *, expect_main: bool = True) -> None:
    assert p.total_samples > 100
    assert p.events == ("cpu-clock",)
    top = p.top_self(2)
    assert [sym for sym, _ in top] == ["hot_loop", "warm_loop"]
    hot, warm = top[0][1], top[1][1]
    assert hot > 60 and 8 < warm < 35 and hot > 2.5 * warm  # 4:1 work split
    for sym, self_pct in p.self_percent.items():
        assert p.children_percent[sym] >= self_pct - 1e-9, sym
    if expect_main:
        assert p.children_percent["main"] > 95
        [(trace, share)] = [
            (t, v) for t, v in p.calltrace_percent.items() if t[:2] == ("hot_loop", "main")
        ]
        # all but a few of hot_loop's samples come through main; a live machine interrupts
        # a handful elsewhere (5 of 325 once), so allow 3% of the samples, not 1 point
        assert len(trace) == p.max_frames and share == pytest.approx(hot, abs=3.0)
    assert all(v >= p.min_percent for v in p.self_percent.values())


# --------------------------------------------------------------- real perf, end to end


@pytest.fixture(scope="module")
def perf_script_output(tmp_path_factory) -> Path:
    if not (shutil.which("perf") and shutil.which("cc")):
        if os.environ.get("CI"):
            pytest.fail("perf or cc missing; install.sh installs linux-perf and gcc")
        pytest.skip("perf or cc not installed")
    d = tmp_path_factory.mktemp("perfprof")
    (d / "prog.c").write_text(PROG)
    subprocess.run(
        ["cc", "-O1", "-fno-inline", "-g", "-o", "prog", "prog.c"], cwd=d, check=True
    )
    # -O1 omits frame pointers, so "-g" (frame-pointer unwinding) loses main; DWARF
    # unwinding gives the true stacks (see the prog_fp_O1 fixture below).
    rec = subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "--call-graph", "dwarf",
         "-o", "perf.data", "--", "./prog", "20000000"],
        cwd=d, capture_output=True, text=True, timeout=60,
    )
    if rec.returncode != 0:
        pytest.skip(f"perf record failed here: {rec.stderr.strip()[:200]}")
    out = d / "script.txt"
    with out.open("w") as fh:
        subprocess.run(
            ["perf", "script", "-i", "perf.data"], cwd=d, stdout=fh, check=True,
            stderr=subprocess.DEVNULL, timeout=60,
        )
    return out


def test_real_perf_hot_function_on_top(perf_script_output):
    _check_prog_profile(parse_file(perf_script_output))


def test_real_perf_streamed_from_a_pipe(perf_script_output):
    with perf_script_output.open() as fh:
        assert aggregate(fh) == parse_file(perf_script_output)


# ------------------------------------------------------------ captured perf output


def test_fixture_dwarf_call_graph():
    p = parse_file(DATA / "prog_dwarf_cpu_clock.txt")
    _check_prog_profile(p)
    assert p.total_samples == 294
    # the root-most frame is on every user stack; the kernel frames come from
    # page faults while the loader runs
    assert p.children_percent["_start"] > 99
    assert "(inlined)" not in " ".join(p.children_percent)
    lines = list(folded_lines(p))
    assert lines[0].startswith("_start;")
    assert lines[0].endswith(";main;hot_loop 233")
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == p.total_samples


def test_fixture_frame_pointer_stacks_at_O1_lose_main():
    """perf record -g on a -O1 binary: no frame pointers, so main is not seen."""
    p = parse_file(DATA / "prog_fp_O1_cpu_clock.txt")
    _check_prog_profile(p, expect_main=False)
    assert "main" not in p.children_percent
    # the user stack stops at the leaf: no caller of hot_loop is ever seen
    assert p.children_percent["hot_loop"] == p.self_percent["hot_loop"]
    assert list(folded_lines(p))[:2] == ["hot_loop 212", "warm_loop 52"]
    assert "asm_exc_page_fault" in p.children_percent  # kernel frames parsed


def test_fixture_without_call_graph_frame_on_header_line():
    # perf record without -g: perf script pads the command with spaces and prints
    # the one frame on the header line
    p = parse_file(DATA / "prog_nocallgraph_cpu_clock.txt")
    _check_prog_profile(p, expect_main=False)
    assert p.self_percent == p.children_percent
    assert "handle_intel" in p.self_percent  # was handle_intel.constprop.0


# ----------------------------------------------------------------- hand-made lines


def sample(*frames: str, period: int = 1000, event: str = "cpu-clock") -> list[str]:
    head = f"prog  4242  100.000001:     {period} {event}: \n"
    return [head, *(f"\t{0x1000 + i:16x} {f}\n" for i, f in enumerate(frames)), "\n"]


def test_suffixes_and_offsets_stripped():
    assert normalize_symbol("do_sys_poll.isra.0+0x1f") == "do_sys_poll"
    assert normalize_symbol("foo.constprop.0.isra.0") == "foo"
    assert normalize_symbol("bar.part.12+0x0") == "bar"
    assert normalize_symbol("baz.cold") == "baz.cold"
    assert normalize_symbol("") == "[unknown]"
    lines = [
        *sample("fget_light.isra.0+0x10 ([kernel.kallsyms])",
                "do_sys_poll.constprop.0+0x2 ([kernel.kallsyms])"),
        *sample("fget_light.isra.3+0x99 ([kernel.kallsyms])",
                "[unknown] ([unknown])"),
    ]
    p = aggregate(lines)
    assert dict(p.self_percent) == {"fget_light": 100.0}
    assert dict(p.children_percent) == {
        "fget_light": 100.0, "do_sys_poll": 50.0, "[unknown]": 50.0,
    }
    assert p.calltrace_percent[("fget_light", "do_sys_poll")] == 50.0
    assert lkp_stats(p)["perf-profile.self.cycles-pp.fget_light"] == 100.0


def test_min_percent_cut_and_recursion_counted_once():
    rare = sample("rare+0x1 (/p)", "main+0x1 (/p)")  # 1 sample in 2001 = 0.04998%
    common = sample("fib+0x1 (/p)", "fib+0x5 (/p)", "fib+0x5 (/p)", "main+0x1 (/p)")
    lines = rare + common * 2000
    p = aggregate(lines)
    assert p.total_samples == 2001
    assert "rare" not in p.self_percent and "rare" not in p.children_percent
    assert ("rare", "main") not in p.calltrace_percent
    assert p.children_percent["fib"] == pytest.approx(100 * 2000 / 2001)  # not 3x
    assert p.children_percent["main"] == 100.0
    assert aggregate(lines, min_percent=0.0).self_percent["rare"] == pytest.approx(
        100 / 2001
    )
    # folded stacks keep every sample, root first
    assert list(folded_lines(p)) == ["main;fib;fib;fib 2000", "main;rare 1"]


def test_calltrace_windows_are_callee_first_and_capped():
    frames = [f"f{i}+0x0 (/p)" for i in range(7)]  # f0 is the leaf, f6 the root
    p = aggregate(sample(*frames), max_frames=3)
    assert set(p.calltrace_percent) == {
        ("f0", "f1", "f2"), ("f1", "f2", "f3"), ("f2", "f3", "f4"),
        ("f3", "f4", "f5"), ("f4", "f5", "f6"), ("f5", "f6"), ("f6",),
    }
    assert "perf-profile.calltrace.cycles-pp.f0.f1.f2" in lkp_stats(p)


def test_period_weighting_and_events():
    lines = sample("a+0x0 (/p)", period=3000) + sample("b+0x0 (/p)", period=1000)
    p = aggregate(lines)
    assert p.self_percent == {"a": 75.0, "b": 25.0}
    assert p.total_period == 4000 and p.total_samples == 2
    # no blank line at the end, tracepoint-style event name with a colon
    q = aggregate(["comm 1 [000] 5.000001: sched:sched_switch: prev_comm=x\n",
                   "\t1 schedule+0x1 ([kernel.kallsyms])\n"])
    assert q.events == ("sched:sched_switch",) and q.self_percent == {"schedule": 100.0}


def test_empty_and_malformed_input():
    assert aggregate([]).total_samples == 0
    assert aggregate([]).self_percent == {}
    with pytest.raises(PerfScriptError, match="line 1"):
        aggregate(["\t1234 foo+0x1 (/p)\n"])
    with pytest.raises(PerfScriptError, match="line 1"):
        aggregate(["this is not perf script output\n"])


def test_profile_is_frozen():
    p = aggregate(sample("a+0x0 (/p)"))
    with pytest.raises(AttributeError):
        p.total_samples = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.self_percent["a"] = 1.0  # type: ignore[index]


# ------------------------------------------------------------------------- memory

_STACKS = [
    sample("hot_loop+0x24 (/p)", "main+0x17 (/p)", "_start+0x20 (/p)")[1:-1],
    sample("warm_loop.isra.0+0x24 (/p)", "main+0x1c (/p)", "_start+0x20 (/p)")[1:-1],
    sample("fget_light+0x1 ([kernel.kallsyms])", "do_sys_poll.constprop.0+0x9 "
           "([kernel.kallsyms])", "[unknown] ([unknown])")[1:-1],
]


def _synthetic(n: int):
    for i in range(n):
        yield f"prog  4242  {i // 4000}.{i % 4000:06d}:     250000 cpu-clock: \n"
        yield from _STACKS[i % 3]
        yield "\n"


def _peak(n: int) -> tuple[int, Profile]:
    gen = _synthetic(n)
    tracemalloc.start()
    try:
        p = aggregate(gen)
        return tracemalloc.get_traced_memory()[1], p
    finally:
        tracemalloc.stop()


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_memory_does_not_grow_with_sample_count():
    # tracemalloc slows allocation ~8x, so 12k vs 120k keeps this test short;
    # the untraced pass below covers a million samples.
    small, p_small = _peak(12_000)
    large, p_large = _peak(120_000)
    assert p_large.total_samples == 120_000
    assert p_large.self_percent == p_small.self_percent
    assert large < 2 * small and large < 256 * 1024, (small, large)
    p = aggregate(_synthetic(1_000_000))
    assert p.total_samples == 1_000_000 and len(p.stacks) == 3
    assert p.children_percent["main"] == pytest.approx(200 / 3, abs=0.01)
