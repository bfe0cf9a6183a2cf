"""Where the opprobe binary and the capture recorder are."""
import os
import shutil

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class OpprobeError(RuntimeError):
    """The analysis could not run: no binary, bad input (exit 2) or an unusable backend (exit 3)."""

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        self.exit_code = exit_code


def source_dir():
    """The checkout the package comes from: recorded at build time, or the tree around python/opprobe."""
    try:
        from opprobe._build_info import SOURCE_DIR  # written by setup.py
        return SOURCE_DIR
    except ImportError:
        tree = os.path.dirname(os.path.dirname(_PKG_DIR))
        return tree if os.path.isdir(os.path.join(tree, "capture", "opprobe_capture")) else None


def find_binary():
    """The `opprobe` executable: $OPPROBE_BIN, the package's bundled bin/opprobe, `opprobe` on PATH, then
    the build folder of the checkout the package was installed from ($OPPROBE_BUILD_DIR or build/)."""
    tried = []
    env = os.environ.get("OPPROBE_BIN")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise OpprobeError("OPPROBE_BIN=%s is not an executable file" % env)
    candidates = [os.path.join(_PKG_DIR, "bin", "opprobe")]
    on_path = shutil.which("opprobe")
    if on_path:
        candidates.append(on_path)
    src = source_dir()
    if src:
        build = os.environ.get("OPPROBE_BUILD_DIR") or "build"
        candidates.append(os.path.join(src, build, "opprobe") if not os.path.isabs(build)
                          else os.path.join(build, "opprobe"))
    for c in candidates:
        tried.append(c)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise OpprobeError("cannot find the opprobe binary (tried %s); build it (scripts/test or cmake, see README.md), "
                       "put it on PATH or set OPPROBE_BIN" % ", ".join(tried + ["$OPPROBE_BIN", "PATH"]))


def capture_dir():
    """The folder holding the capture package opprobe_capture (and nothing else): the copy bundled at build time,
    or the checkout's capture/."""
    bundled = os.path.join(_PKG_DIR, "_capture")
    if os.path.isfile(os.path.join(bundled, "opprobe_capture", "recorder.py")):
        return bundled
    src = source_dir()
    if src and os.path.isfile(os.path.join(src, "capture", "opprobe_capture", "recorder.py")):
        return os.path.join(src, "capture")
    raise OpprobeError("cannot find the capture package (opprobe_capture) beside the package or in the checkout")
