#!/usr/bin/env bash
# Set up perflab on a Debian machine: the Debian programs it drives, then a virtualenv.
#   ./install.sh          perflab and the benchmarks it runs; `perflab` on PATH (a link in
#                         /usr/local/bin as root, else in ~/.local/bin)
#   ./install.sh --test   also what the tests and CI need (PostgreSQL and Redis servers, chromium and its
#                         driver for the HTML tests, pytest, pyperf, selenium,
#                         hypothesis, ruff, mypy, import-linter, mkdocs-material)
set -euo pipefail
cd "$(dirname "$0")"
case "${1:-}" in
  ""|--test) ;;
  *) echo "install.sh: unknown option '$1' (usage: ./install.sh [--test])" >&2; exit 2 ;;
esac

packages=(linux-perf rt-tests dbench iperf3 hyperfine stress-ng gcc git)
# redis-server: the fleet's broker, for its tests (a lab's broker usually runs on another machine)
[ "${1:-}" = "--test" ] && packages+=(postgresql chromium chromium-driver redis-server)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "install.sh: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "install.sh: not root (or no apt-get): install these yourself for every workload to work:" >&2
    echo "  sudo apt-get install ${missing[*]}" >&2
  fi
fi

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "install.sh: perflab needs Python >= 3.11 (set PYTHON=...)" >&2; exit 3; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
extras=""
[ "${1:-}" = "--test" ] && extras="[test,docs]"
.venv/bin/pip install -q --disable-pip-version-check -e ".$extras"

# `perflab` on PATH: a link to the virtualenv's (never over a perflab that is not such a link)
if [ "$(id -u)" -eq 0 ]; then bin=/usr/local/bin; else bin="$HOME/.local/bin"; fi
link="$bin/perflab"
if [ -e "$link" ] && [ ! -L "$link" ]; then
  echo "install.sh: ready: .venv/bin/perflab ($link exists and is not a link: left as it is)"
else
  mkdir -p "$bin" && ln -sfn "$PWD/.venv/bin/perflab" "$link"
  case ":$PATH:" in
    *":$bin:"*) echo "install.sh: ready: perflab is on PATH ($link -> .venv/bin/perflab)" ;;
    *) echo "install.sh: ready: linked $link -> .venv/bin/perflab; add $bin to PATH to type 'perflab'" ;;
  esac
fi
