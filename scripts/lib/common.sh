# Shared by scripts/demo and scripts/test: install what is missing (Debian 12), configure, build.
# Sourced, not run. Honours OPPROBE_BUILD_DIR (default: build) and OPPROBE_JOBS (default: nproc).

set -euo pipefail

OPPROBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OPPROBE_BUILD_DIR="${OPPROBE_BUILD_DIR:-$OPPROBE_ROOT/build}"
OPPROBE_JOBS="${OPPROBE_JOBS:-$(nproc)}"

# Every dependency is a Debian package; the build never downloads anything.
OPPROBE_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libprotobuf-dev protobuf-compiler nlohmann-json3-dev libcli11-dev libfmt-dev libzip-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-torch python3-torchvision python3-torchaudio
  zip unzip
)
# Test-only tools: the HTML report is checked in a real browser, JUnit output against its XSD (xmllint).
OPPROBE_TEST_PACKAGES=(chromium libxml2-utils)

opprobe_install() {
  local wanted=("$@") missing=()
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "opprobe: installing missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "opprobe: need root (or sudo) to install: ${missing[*]}" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

opprobe_build() {
  cmake -S "$OPPROBE_ROOT" -B "$OPPROBE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  if [ -n "${OPPROBE_TARGET:-}" ]; then
    cmake --build "$OPPROBE_BUILD_DIR" -j "$OPPROBE_JOBS" --target "$OPPROBE_TARGET"
  else
    cmake --build "$OPPROBE_BUILD_DIR" -j "$OPPROBE_JOBS"
  fi
}
