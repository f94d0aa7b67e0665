"""Run the README's five-minute tour again and put its real output under each command.

    .venv/bin/python contrib/readme_tour.py            # print the refreshed README
    .venv/bin/python contrib/readme_tour.py --write    # rewrite README.md in place

The tour is the README's "## A five-minute tour" section: each ```sh block holds one command
and the ```text block after it that command's output (stdout and stderr, as a terminal shows
them), run in a new directory against a new database. After a change to what these commands
print, run this so the README keeps showing real output, and check its prose still fits.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
PAIR = re.compile(r"```sh\n(?P<command>[^\n]+)\n```\n\n```text\n.*?```\n", re.S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite README.md instead of printing it")
    args = parser.parse_args()
    text = README.read_text()
    start = text.index("## A five-minute tour")
    end = text.index("\n## ", start + 1)
    perflab = str(Path(sys.executable).with_name("perflab"))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PERFLAB_DB=os.path.join(tmp, "perflab.db"))
        env.pop("COLUMNS", None)  # as in an 80-column terminal

        def rerun(pair: re.Match[str]) -> str:
            command = pair["command"]
            line = re.sub(r"(^|&& )perflab ", rf"\g<1>{perflab} ", command)
            result = subprocess.run(["bash", "-c", f"{line} 2>&1"], cwd=tmp, env=env, capture_output=True,
                                    text=True, timeout=600)
            return f"```sh\n{command}\n```\n\n```text\n{result.stdout.rstrip()}\n```\n"

        tour = PAIR.sub(rerun, text[start:end])
    refreshed = text[:start] + tour + text[end:]
    if args.write:
        README.write_text(refreshed)
    else:
        sys.stdout.write(refreshed)


if __name__ == "__main__":
    main()
