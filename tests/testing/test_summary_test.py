#!/usr/bin/python3
"""scripts/lib/test_summary.py (scripts/test's summary) on the JUnit file of a real ctest run: a small CMake
project with a test of each outcome (passing, failing, a SKIP_RETURN_CODE skip, a GoogleTest-style skip matched by
SKIP_REGULAR_EXPRESSION, a disabled test, a missing executable) is configured and run with this machine's ctest,
so the test also notices when ctest's JUnit output changes. And in opprobe's own build tree, every ctest test that
runs a GoogleTest binary reports a GTEST_SKIP as skipped (SKIP_REGULAR_EXPRESSION), or the summary could not see it.

Run: /usr/bin/python3 -m unittest discover -s tests/testing -p 'test_summary_test.py' (ctest: test_summary).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = os.path.join(ROOT, "scripts", "lib", "test_summary.py")
# The build's own cmake and ctest (tests/CMakeLists.txt passes them), else those on PATH.
CMAKE = os.environ.get("OPPROBE_CMAKE", "cmake")
CTEST = os.environ.get("OPPROBE_CTEST", "ctest")
BUILD = os.environ.get("OPPROBE_BUILD_DIR", os.path.join(ROOT, "build"))

# name -> CMake lines that define it
TESTS = {
    "passes": 'add_test(NAME passes COMMAND sh -c "exit 0")',
    "fails": 'add_test(NAME fails COMMAND sh -c "exit 1")',
    "skips77": 'add_test(NAME skips77 COMMAND sh -c "exit 77")\n'
               'set_tests_properties(skips77 PROPERTIES SKIP_RETURN_CODE 77)',
    "Suite.GtestSkip": 'add_test(NAME Suite.GtestSkip COMMAND sh -c "echo \'[  SKIPPED ] Suite.GtestSkip (0 ms)\'")\n'
                       'set_tests_properties(Suite.GtestSkip PROPERTIES '
                       'SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")',
    "disabled": 'add_test(NAME disabled COMMAND sh -c "exit 0")\n'
                'set_tests_properties(disabled PROPERTIES DISABLED ON)',
    "missing": 'add_test(NAME missing COMMAND /nonexistent/opprobe-no-such-program)',
}


class TestSummary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="opprobe-test-summary-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def ctest(self, names):
        """Runs ctest on a project with the named tests; returns (ctest's exit status, JUnit file)."""
        src, build = os.path.join(self.dir, "src"), os.path.join(self.dir, "build")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.25)\nproject(summary NONE)\nenable_testing()\n")
            f.write("\n".join(TESTS[n] for n in names) + "\n")
        shutil.rmtree(build, ignore_errors=True)
        subprocess.run([CMAKE, "-S", src, "-B", build], check=True, stdout=subprocess.DEVNULL)
        junit = os.path.join(build, "Testing", "results.xml")
        r = subprocess.run([CTEST, "--output-junit", junit], cwd=build, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        return r.returncode, junit

    def summary(self, status, junit, *allow):
        r = subprocess.run([sys.executable, SUMMARY, "--ctest-status", str(status), junit] +
                           ["--allow=" + a for a in allow], capture_output=True, text=True)
        self.assertEqual(r.stderr, "")
        return r.returncode, r.stdout.splitlines()

    def test_every_outcome_is_counted_and_skips_are_named(self):
        status, junit = self.ctest(list(TESTS))
        self.assertNotEqual(status, 0)
        code, lines = self.summary(status, junit)
        self.assertEqual(code, 1)
        self.assertEqual(lines[0], "scripts/test: 6 tests: 1 passed, 2 failed, 3 skipped: "
                                   "skips77, Suite.GtestSkip, disabled")
        self.assertEqual(lines[1], "scripts/test: failed: fails, missing")
        self.assertIn("3 tests skipped", lines[2])

    def test_a_skip_alone_fails_the_run(self):
        status, junit = self.ctest(["passes", "Suite.GtestSkip"])
        self.assertEqual(status, 0)  # ctest itself passes a run with skips
        code, lines = self.summary(status, junit)
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["scripts/test: 2 tests: 1 passed, 0 failed, 1 skipped: Suite.GtestSkip",
                                 "scripts/test: FAILED: 1 test skipped; a skip fails the run unless scripts/test's "
                                 "allow-list names it with why (README.md \"Tests\")"])

    def test_an_allowed_skip_passes_and_says_why(self):
        status, junit = self.ctest(["passes", "skips77"])
        code, lines = self.summary(status, junit, "skips77=needs a thing this machine cannot have")
        self.assertEqual(code, 0)
        self.assertEqual(lines, ["scripts/test: 2 tests: 1 passed, 0 failed, 1 skipped: "
                                 "skips77 (allowed: needs a thing this machine cannot have)"])

    def test_all_passing_passes(self):
        status, junit = self.ctest(["passes"])
        self.assertEqual(self.summary(status, junit), (0, ["scripts/test: 1 test: 1 passed, 0 failed, 0 skipped"]))

    def test_ctest_failing_without_results_fails(self):
        code, lines = self.summary(8, os.path.join(self.dir, "absent.xml"))
        self.assertEqual(code, 1)
        self.assertIn("no test results to summarize", lines[0])
        self.assertIn("ctest exited 8", lines[0])
        status, junit = self.ctest(["passes"])
        self.assertEqual(self.summary(2, junit)[0], 1)  # ctest's own failure counts even when every test passed


class BuildTree(unittest.TestCase):
    def test_every_googletest_run_reports_its_skips(self):
        out = subprocess.run([CTEST, "--show-only=json-v1"], cwd=BUILD, check=True, capture_output=True, text=True)
        tests = json.loads(out.stdout)["tests"]
        gtest_runs = 0
        for t in tests:
            # A test binary of tests/CMakeLists.txt (tests/<folder>_tests), run directly or through a wrapper.
            if not any(re.fullmatch(r"[a-z_]+_tests", os.path.basename(a)) and os.path.isabs(a)
                       for a in t.get("command", [])):
                continue
            gtest_runs += 1
            props = {p["name"]: p["value"] for p in t.get("properties", [])}
            skip = props.get("SKIP_REGULAR_EXPRESSION", [])
            skip = skip if isinstance(skip, list) else [skip]
            self.assertTrue(any(re.search(r, "[  SKIPPED ] X.Y (0 ms)") for r in skip),
                            "%s runs GoogleTest but would report a GTEST_SKIP as passed" % t["name"])
        self.assertGreater(gtest_runs, 100)


if __name__ == "__main__":
    unittest.main()
