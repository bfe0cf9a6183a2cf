#!/usr/bin/python3
"""scripts/test's summary of one ctest run.

Reads the JUnit file that `ctest --output-junit FILE` wrote and prints one line: how many tests passed, failed
and skipped, with the names of the skipped ones; then the names of the failed ones, if any. Exits 1 when ctest
itself failed (--ctest-status), when a test failed or did not run, or when a test skipped that an --allow
NAME=WHY does not name; 0 otherwise.

What ctest counts as skipped: a test whose exit code is its SKIP_RETURN_CODE (the conformance suite's 77), one
whose output matched its SKIP_REGULAR_EXPRESSION (gtest_discover_tests sets `[  SKIPPED ]` on every GoogleTest
case, so GTEST_SKIP lands here), and a DISABLED one. A test ctest could not start ("Not Run": a missing
executable, a failed fixture) is a failure, as ctest counts it.

Usage: test_summary.py [--ctest-status N] [--allow NAME=WHY ...] JUNIT.xml
"""
import argparse
import sys
import xml.etree.ElementTree as ET

SKIP_MESSAGES = ("SKIP_RETURN_CODE", "SKIP_REGULAR_EXPRESSION_MATCHED")


def classify(case):
    """'passed', 'failed' or 'skipped' for one <testcase> of ctest's JUnit file."""
    status = case.get("status", "")
    if status == "run":
        return "passed"
    if status == "disabled":
        return "skipped"
    if status == "notrun":
        skipped = case.find("skipped")
        message = skipped.get("message", "") if skipped is not None else ""
        return "skipped" if message.startswith(SKIP_MESSAGES) else "failed"
    return "failed"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit")
    ap.add_argument("--ctest-status", type=int, default=0)
    ap.add_argument("--allow", action="append", default=[], metavar="NAME=WHY",
                    help="a test that may skip, and why")
    args = ap.parse_args(argv)
    allowed = {}
    for a in args.allow:
        name, sep, why = a.partition("=")
        if not sep or not name or not why:
            ap.error("--allow takes NAME=WHY, got %r" % a)
        allowed[name] = why

    try:
        cases = ET.parse(args.junit).getroot().iter("testcase")
        results = {"passed": [], "failed": [], "skipped": []}
        for case in cases:
            results[classify(case)].append(case.get("name", "?"))
    except (OSError, ET.ParseError) as e:
        print("scripts/test: no test results to summarize (%s); ctest exited %d" % (e, args.ctest_status))
        return 1

    passed, failed, skipped = results["passed"], results["failed"], results["skipped"]
    shown = ["%s (allowed: %s)" % (n, allowed[n]) if n in allowed else n for n in skipped]
    total = len(passed) + len(failed) + len(skipped)
    print("scripts/test: %d test%s: %d passed, %d failed, %d skipped%s" %
          (total, "" if total == 1 else "s", len(passed), len(failed), len(skipped),
           (": " + ", ".join(shown)) if skipped else ""))
    if failed:
        print("scripts/test: failed: " + ", ".join(failed))
    unexpected = [n for n in skipped if n not in allowed]
    if unexpected:
        print("scripts/test: FAILED: %d test%s skipped; a skip fails the run unless scripts/test's allow-list names "
              "it with why (README.md \"Tests\")" % (len(unexpected), "" if len(unexpected) == 1 else "s"))
    if args.ctest_status != 0 and not failed:
        print("scripts/test: FAILED: ctest exited %d" % args.ctest_status)
    return 1 if failed or unexpected or args.ctest_status != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
