"""Build hook for the opprobe Python package (configuration is in pyproject.toml).

build_py adds two things to the built package: opprobe/_capture/opprobe_capture/ (a copy of the capture package
capture/opprobe_capture, its modules and the fast path's source fastpath.cpp: the same recorder `opprobe capture` runs,
so there is one recorder) and
opprobe/_build_info.py (the checkout the package was built from, so opprobe.find_binary() can find
<checkout>/build/opprobe).
"""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildPy(build_py):
    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "opprobe")
        capture = os.path.join(pkg, "_capture", "opprobe_capture")
        os.makedirs(capture, exist_ok=True)
        for f in glob.glob(os.path.join(ROOT, "capture", "opprobe_capture", "*.py")) + \
                glob.glob(os.path.join(ROOT, "capture", "opprobe_capture", "*.cpp")):
            shutil.copy2(f, capture)
        with open(os.path.join(pkg, "_build_info.py"), "w") as out:
            out.write("# Written by setup.py when the package was built.\nSOURCE_DIR = %r\n" % ROOT)


# setuptools' scratch folder goes under python/, not into build/ (CMake's build folder).
setup(cmdclass={"build_py": BuildPy}, options={"build": {"build_base": os.path.join("python", ".build")}})
