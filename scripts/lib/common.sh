# Shared by scripts/demo and scripts/test: install what is missing (Debian 12), configure, build.
# Sourced, not run. Honours OPPROBE_BUILD_DIR (default: build) and OPPROBE_JOBS (default: nproc).

set -euo pipefail

OPPROBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OPPROBE_BUILD_DIR="${OPPROBE_BUILD_DIR:-$OPPROBE_ROOT/build}"
OPPROBE_JOBS="${OPPROBE_JOBS:-$(nproc)}"
# ccache (CMakeLists.txt) hashes absolute paths and, with debug info, the build folder: without these, a second
# checkout of the same commit (CI's fresh clone) compiles everything again. Paths under the checkout count relative
# to it, so every checkout on a machine shares one cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$OPPROBE_ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"

# Every dependency is a Debian package; the build never downloads anything.
OPPROBE_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libprotobuf-dev protobuf-compiler nlohmann-json3-dev libcli11-dev libfmt-dev libzip-dev libeigen3-dev libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-torch python3-torchvision python3-torchaudio
  zip unzip
)
# The capture's fast path (capture/opprobe_capture/fastpath.cpp, docs/capture.md) is a PyTorch C++ extension compiled
# against each PyTorch: Debian's PyTorch 1.13 needs its headers (libtorch-dev) and pybind11's; PyTorch 2.x's wheel
# ships both. ninja-build (above) drives the compile.
OPPROBE_PACKAGES+=(libtorch-dev pybind11-dev)
# Test-only tools: the HTML report is checked in a real browser, JUnit output against its XSD (xmllint).
OPPROBE_TEST_PACKAGES=(chromium libxml2-utils)
# The Python API's `pip install` test builds the package offline with Debian's setuptools.
OPPROBE_TEST_PACKAGES+=(python3-setuptools python3-pip python3-venv)
# Shared probe caches: Redis through hiredis, HTTP through libcurl; their tests start real servers.
OPPROBE_PACKAGES+=(libhiredis-dev libcurl4-openssl-dev)
OPPROBE_TEST_PACKAGES+=(redis-server nginx)
# The habits tier (scripts/check): formatting of the C++ code (.clang-format); its lint, clang-tidy, comes with ruff
# in the lint environment (requirements/lint.txt).
OPPROBE_TEST_PACKAGES+=(clang-format-16)
# The local probe cache: one SQLite database per cache folder.
OPPROBE_PACKAGES+=(libsqlite3-dev)
# Debian's oneDNN CMake package (dnnl-config.cmake, hlo/CMakeLists.txt) looks for OpenCL and fails without it, but
# libdnnl-dev only recommends the OpenCL files, and installs here skip recommends: a bare machine needs them named.
OPPROBE_PACKAGES+=(ocl-icd-opencl-dev)
# The libFuzzer targets (scripts/fuzz, fuzz/README.md): clang 16 and its sanitizer runtimes; scripts/test runs them.
OPPROBE_FUZZ_PACKAGES=(clang-16 libclang-rt-16-dev)
OPPROBE_TEST_PACKAGES+=("${OPPROBE_FUZZ_PACKAGES[@]}")

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
  # Another install (a second checkout's script) may hold the package lock: wait for it rather than fail.
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -qq
  $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# `opprobe_capture_native PYTHON`: compiles the capture's fast path for that Python's PyTorch into the cache folder
# that capture/opprobe_capture/native.py names (once per PyTorch and per source; 20-40 s here, then nothing). Without it
# `opprobe capture` records through the Python path alone, with the same traces, only slower.
opprobe_capture_native() {
  local log
  log="$(mktemp)"
  if ! "$1" "$OPPROBE_ROOT/capture/opprobe_capture" --build-fastpath >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "opprobe: compiling the capture fast path for $1 failed (see above)" >&2
    return 1
  fi
  rm -f "$log"
}

# Configures the build folder (the arguments go to cmake); scripts/test, scripts/demo and scripts/bench share it, so
# one configuration holds whichever runs first. The build is optimized with line tables only (-g1: file, line and
# function for backtraces and profilers, no variables): full debug info made every compile about 40% longer
# (fit_test.cpp 16.5 s against 11.5 s, chip_backend.cpp 10.4 against 7.0), which CI's 45 minutes on two cores do not
# hold. For a debugger's variables, configure a folder of your own with -DCMAKE_BUILD_TYPE=Debug.
opprobe_configure() {
  cmake -S "$OPPROBE_ROOT" -B "$OPPROBE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "$@" >/dev/null
}

opprobe_build() {
  opprobe_configure "$@"
  if [ -n "${OPPROBE_TARGET:-}" ]; then
    cmake --build "$OPPROBE_BUILD_DIR" -j "$OPPROBE_JOBS" --target "$OPPROBE_TARGET"
  else
    cmake --build "$OPPROBE_BUILD_DIR" -j "$OPPROBE_JOBS"
  fi
}

# Python packages from PyPI live in virtual environments the scripts create and reuse, never in the system
# Python: `opprobe_venv NAME` makes (or refreshes) $OPPROBE_VENV_ROOT/NAME from requirements/NAME.txt, whose
# versions are pinned, and prints the environment's python. A stamp holding the requirements file's hash
# makes a second call instant; pip's own download cache (~/.cache/pip) makes a rebuilt environment cheap.
# OPPROBE_VENV_ROOT defaults to .venv in the checkout; point several checkouts at one folder to share them.
OPPROBE_VENV_ROOT="${OPPROBE_VENV_ROOT:-$OPPROBE_ROOT/.venv}"

opprobe_venv() {
  local name="$1" req="$OPPROBE_ROOT/requirements/$1.txt"
  local dir="$OPPROBE_VENV_ROOT/$name"
  [ -f "$req" ] || { echo "opprobe: no requirements file $req" >&2; return 1; }
  opprobe_install python3-venv >&2
  mkdir -p "$OPPROBE_VENV_ROOT"
  local want base base_python=""
  # A line `# opprobe-venv-base: OTHER` layers this environment on OTHER's packages (a .pth file names
  # OTHER's site-packages) instead of installing them twice (torch_xla on top of torch2: no second torch).
  base="$(sed -n 's/^# opprobe-venv-base: *\([A-Za-z0-9_]*\).*/\1/p' "$req")"
  [ -z "$base" ] || base_python="$(opprobe_venv "$base")" || return 1
  want="$(cat "$req" ${base:+"$OPPROBE_ROOT/requirements/$base.txt"} | sha256sum | cut -d' ' -f1)"
  (
    flock 9
    if [ "$(cat "$dir/.opprobe-stamp" 2>/dev/null)" != "$want" ]; then
      echo "opprobe: preparing the Python environment $dir from requirements/$name.txt" >&2
      [ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv "$dir" >&2
      if [ -n "$base_python" ]; then
        "$base_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
          > "$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/opprobe-venv-base.pth"
      fi
      "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
      echo "$want" > "$dir/.opprobe-stamp"
    fi
  ) 9>"$OPPROBE_VENV_ROOT/.$name.lock"
  echo "$dir/bin/python"
}

# An environment's site-packages folder (made by opprobe_venv when missing).
opprobe_site_packages() { "$(opprobe_venv "$1")" -I -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

# The real TPU and GPU compilers of the tpu: and gpu: backends (compiler_probe/chip): libtpu (requirements/tpu.txt)
# and XLA's CUDA plugin with ptxas (requirements/gpu.txt), PJRT plugins that compile with no device present. Exports
# OPPROBE_LIBTPU and OPPROBE_CUDA_PLUGIN where they are unset (scripts/test, scripts/agreement, scripts/bench).
opprobe_chip_plugins() {
  if [ -z "${OPPROBE_LIBTPU:-}" ]; then
    OPPROBE_LIBTPU="$(opprobe_site_packages tpu)/libtpu/libtpu.so"
    export OPPROBE_LIBTPU
  fi
  if [ -z "${OPPROBE_CUDA_PLUGIN:-}" ]; then
    OPPROBE_CUDA_PLUGIN="$(opprobe_site_packages gpu)/jax_plugins/xla_cuda12/xla_cuda_plugin.so"
    export OPPROBE_CUDA_PLUGIN
  fi
}
