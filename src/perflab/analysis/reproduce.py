"""Shell lines that measure a change's commit again: "To reproduce" of `report change`.

A sequence that works in a fresh clone, in order: the clone of the repository and the
checkout of the commit; the build line the runs recorded (a robot's, a bisect's; else a
line for the build system at the top of the tree, said plainly to be a guess); the
`perflab run` line the first run recorded, with --commit set (a run that recorded none is
said so). Never a path of the machine's own checkout or a worker's worktree: the clone is
made where the reader runs the lines.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from perflab.model.report.history import HistoryPoint
from perflab.vcs import top_level_files

__all__ = ["BUILD_SYSTEMS", "build_line", "recorded_build", "reproduce_lines", "with_option"]


def reproduce_lines(point: HistoryPoint, repo: str | None, recorded: str | None = None,
                    commit: str | None = None) -> list[str]:
    """Shell lines that measure the change's commit again, as its first run was made.

    ``repo``: the repository when it is there; ``recorded``: the path the runs recorded;
    ``commit``: the commit to measure when not the point's (the bisected culprit, built
    and measured as the point's runs were).
    """
    run = point.runs[0]
    argv = list(run.request.identity.command_line or [])
    built = run.request.identity.build   # the build line the runs recorded, else a guess
    commit = commit or point.commit
    lines = []
    if commit:
        there = bool(repo and Path(repo).is_dir())
        if repo and there:
            clone = f"perflab-{commit[:12]}"
            lines.append(f"git clone -q {shlex.quote(repo)} {clone} && cd {clone}   # a fresh clone")
        else:
            where = recorded or run.repo
            why = (f"{where} is gone" if where else
                   "the runs did not record its path: 'perflab run --repo' does")
            lines.append(f"# in a fresh clone of the repository ({why})")
        lines.append(f"git checkout -q --detach {commit}")
        lines.append(recorded_build(built) if built else
                     build_line(top_level_files(repo, commit) if repo and there else [], run.id))
    if not argv:
        lines.append(f"# run {run.id} did not record its command line; 'perflab show {run.id}' has its plan")
        return lines
    lines.append(shlex.join(with_option(argv, "--commit", commit)))
    return lines


#: A build line by the build system's file at the top of the tree, first found wins.
BUILD_SYSTEMS = (
    ("meson.build", "meson setup build --buildtype=release && ninja -C build"),
    ("CMakeLists.txt", "cmake -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j\"$(nproc)\""),
    ("Makefile", "make -j\"$(nproc)\""),
    ("GNUmakefile", "make -j\"$(nproc)\""),
    ("configure", "./configure && make -j\"$(nproc)\""),
    ("Cargo.toml", "cargo build --release"),
    ("go.mod", "go build ./..."),
)


def build_line(files: Sequence[str], run_id: int | None = None) -> str:
    """The build step of "To reproduce" when the runs recorded none: a line for the build
    system the tree has, said plainly to be a guess, else a comment."""
    which = f"run {run_id}" if run_id is not None else "its runs"
    for name, line in BUILD_SYSTEMS:
        if name in files:
            return f"{line}   # a guess from its {name}: {which} recorded no build line"
    return f"# build it as it was built: {which} recorded no build line, and the tree has no known build file"


def recorded_build(line: str) -> str:
    """The build step as the runs recorded it."""
    return f"{line}   # the build line its runs recorded"


def with_option(argv: list[str], option: str, value: str | None) -> list[str]:
    """The perflab ``run`` argv with ``option`` set to ``value`` (any old one replaced;
    None: removed); only options before ``--`` are looked at."""
    out, skip = [], False
    stop = argv.index("--") if "--" in argv else len(argv)
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if i < stop and word == option:
            skip = True
            continue
        if i < stop and word.startswith(option + "="):
            continue
        out.append(word)
    if value and "run" in out:
        at = out.index("run") + 1
        out[at:at] = [option, value]
    return out
