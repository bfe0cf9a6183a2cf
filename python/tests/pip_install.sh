#!/usr/bin/env bash
# `pip install` of the checkout into a fresh virtual environment, then the issue's acceptance line:
#   python -c "import opprobe, torch; print(opprobe.analyze(torch.nn.Linear(4,2), (torch.randn(3,4),),
#              backend='rules:neuron-trn1')['support_percentage'])"
# Usage: python/tests/pip_install.sh PYTHON BUILD_DIR. PYTHON's torch is reused (--system-site-packages for
# /usr/bin/python3; a venv's python is given its site-packages through a .pth file), and the package is
# built offline (--no-build-isolation, setuptools from Debian's python3-setuptools or the venv).
set -euo pipefail
python="$1"; build="$(cd "$2" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/opprobe-pip-XXXXXX)"
trap 'rm -rf "$work"' EXIT
base="$("$python" -c 'import sys; print(sys.base_prefix)')"
"$base/bin/python3" -m venv --system-site-packages "$work/venv"
site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
vsite="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$site" > "$vsite/opprobe_test_torch.pth"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps "$root"
# Not from the checkout: the installed package must find its recorder and the binary by itself.
cd "$work"
out="$(PATH="/usr/bin:/bin" OPPROBE_BUILD_DIR="$build" "$work/venv/bin/python" -c "import opprobe, torch; print(opprobe.analyze(torch.nn.Linear(4,2), (torch.randn(3,4),), backend='rules:neuron-trn1')['support_percentage'])")"
echo "support_percentage: $out"
[[ "$out" =~ ^[0-9]+(\.[0-9]+)?%$ ]] || { echo "not a percentage: $out" >&2; exit 1; }
loc="$("$work/venv/bin/python" -c 'import opprobe, os; print(os.path.dirname(opprobe.__file__))')"
case "$loc" in "$root"/*) echo "opprobe was imported from the checkout ($loc), not the installed package" >&2; exit 1;; esac
[ -f "$loc/_capture/opprobe_capture/recorder.py" ] || { echo "the recorder is not bundled in $loc/_capture" >&2; exit 1; }
"$work/venv/bin/python" -m opprobe --version
