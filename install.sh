#!/usr/bin/env bash
# Set up perflab on a Debian machine: the Debian programs it drives, then a virtualenv.
#   ./install.sh          perflab and the benchmarks it runs
#   ./install.sh --test   also what the tests and CI need (PostgreSQL and Redis servers, chromium and its
#                         driver for the HTML tests, pytest, pyperf, selenium,
#                         hypothesis, ruff, mypy, import-linter)
set -euo pipefail
cd "$(dirname "$0")"

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
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]"
echo "install.sh: ready: .venv/bin/perflab"
