"""perflab's own C programs: compiled on first use with the system compiler, then cached.

The sources live in ``csrc/`` beside this module (package data). A binary is cached at
``$XDG_CACHE_HOME/perflab/bin/<name>-<key>`` where the key is the SHA-256 of the source,
the compiler and its flags: an edited source or another ``CC`` builds a new binary, an
unchanged one is reused without running the compiler. The compiler writes to a temporary
name in the cache directory and the result is renamed into place, so two perflabs
building at once never see a half-written binary.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from perflab.model.errors import EnvironmentProblem
from perflab.model.records import ProcessResult

CSRC = Path(__file__).resolve().parent / "csrc"
FLAGS = ("-O2", "-pthread")
INSTALL_HINT = "apt-get install gcc"
_ERROR_LINE = re.compile(r"\berror\b|undefined reference", re.IGNORECASE)


def compiler() -> list[str]:
    """The compiler command: ``$CC`` (may carry words, e.g. "ccache gcc") or ``cc``."""
    return shlex.split(os.environ.get("CC", "").strip() or "cc")


def compiler_missing() -> str | None:
    """Why no C program can be built here (with the fix), or None if a compiler is found."""
    command = compiler()
    if not command or shutil.which(command[0]) is None:
        named = f": {os.environ['CC']!r} not found" if os.environ.get("CC", "").strip() else ""
        return f"no C compiler{named} ({INSTALL_HINT})"
    return None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perflab" / "bin"


def private_temp_dir(create: bool = False) -> Path:
    """$TMPDIR/perflab-UID/bin, the build cache of a user without a writable home: used only
    while it is this user's own and nobody else may write it (in a shared /tmp another
    user could have made it first, with a program of their own in it)."""
    directory = Path(tempfile.gettempdir()) / f"perflab-{os.getuid()}" / "bin"
    if create:
        for level in (directory.parent, directory):
            with contextlib.suppress(FileExistsError):
                level.mkdir(mode=0o700)
    for level in (directory.parent, directory):
        try:
            status = os.lstat(level)
        except FileNotFoundError:
            if create:
                raise
            return directory   # nothing there yet: nothing cached to trust
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o022:
            raise PermissionError(errno.EPERM, "not this user's own private directory", str(level))
    return directory


def binary(name: str) -> str:
    """The path of perflab's C program ``name`` (``csrc/<name>.c``), built if not cached."""
    return build(CSRC / f"{name}.c")


def build(source: Path) -> str:
    """The path of the cached binary built from ``source``; compiles it on first use."""
    text = source.read_bytes()
    command = compiler()
    key = hashlib.sha256(b"\0".join([text, " ".join(command).encode(),
                                     " ".join(FLAGS).encode()])).hexdigest()[:16]
    places = [cache_dir()]
    with contextlib.suppress(OSError):   # another user's directory of that name is not looked in
        places.append(private_temp_dir())
    for directory in places:
        target = directory / f"{source.stem}-{key}"
        if os.access(target, os.X_OK):
            return str(target)
    missing = compiler_missing()
    if missing:
        raise EnvironmentProblem(missing)
    directory = cache_dir()
    try:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            scratch = tempfile.mkdtemp(prefix=f".{source.stem}-{key}.", dir=directory)
        except OSError:   # no writable home (`nobody`, HOME=/nonexistent): this user's own temporary one
            directory = private_temp_dir(create=True)
            scratch = tempfile.mkdtemp(prefix=f".{source.stem}-{key}.", dir=directory)
    except OSError as error:
        raise EnvironmentProblem(f"cannot write the build cache {cache_dir()} nor {directory}: {error.strerror}",
                                 hint="set XDG_CACHE_HOME to a writable directory") from None
    target = directory / f"{source.stem}-{key}"
    try:
        output = os.path.join(scratch, target.name)
        done = subprocess.run([*command, *FLAGS, "-o", output, str(source)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise EnvironmentProblem(f"cannot compile {source.name} with {command[0]}: "
                                     + first_error(done.stderr))
        os.replace(output, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return str(target)


def first_error(stderr: str) -> str:
    """The compiler's first error line (a warning or a context line is not the cause)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    chosen = next((line for line in lines if _ERROR_LINE.search(line)), None)
    return chosen or (lines[0] if lines else "the compiler failed without a message")


def complaint(program: str, stderr: str) -> str | None:
    """The last "<program>: why" line our C programs print before exiting non-zero."""
    prefix = f"{program}: "
    lines = [line.strip() for line in stderr.splitlines() if line.startswith(prefix)]
    return lines[-1].removeprefix(prefix) if lines else None


def failure_reason(program: str, stderr: str, result: ProcessResult) -> str:
    """Why a sample of one of our programs failed: its complaint, else how it ended."""
    return complaint(program, stderr) or result.describe_failure()
