#!/usr/bin/env python3
# The coverage sweep (issue #12.7, docs/coverage.md "Coverage sweep"): captures one family of workloads
# (tests/conformance/sweep_cases.py: torch.nn modules, torchvision and torchaudio models, audio transforms,
# tensor factories) with `opprobe capture`, lowers every distinct aten call with `opprobe lower`, and fails
# on any lowering failure or shape mismatch that tests/conformance/sweep_expected.txt does not list.
#
# Usage: sweep.py --family F [--python PY] [--opprobe BIN] [--work DIR] [--expected FILE] [--json OUT]
#   --python  the interpreter that runs the workloads (default /usr/bin/python3, Debian's torch 1.13)
#   exit 0: no new failure; 1: a failure not in the expected list (each printed); 2: usage or capture error.
# Calls outside aten (torchvision::nms, quantized::*) are counted apart: they are not lowering failures.
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_expected(path, family):
    """Lines `FAMILY<TAB>OP<TAB>REASON` (REASON: the failure's message, which names its shapes)."""
    out = set()
    if not path or not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                sys.exit("sweep: %s: malformed line (want FAMILY<TAB>OP<TAB>REASON): %s" % (path, line[:80]))
            if parts[0] == family:
                out.add((parts[1], parts[2]))
    return out


HEADER = re.compile(r"^// (\S+?)\((.*)\) at (.*)$")


def lower(opprobe, trace):
    """Runs `opprobe lower` and returns (distinct calls, [(op, reason, signature, where)])."""
    p = subprocess.run([opprobe, "lower", "--style", "short", trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit("sweep: opprobe lower %s exited %d" % (trace, p.returncode))
    distinct = 0
    failures = []
    last = None
    for line in p.stdout.splitlines():
        m = HEADER.match(line)
        if m:
            distinct += 1
            last = m.groups()
            continue
        if line.startswith("// lowering failed: ") and last:
            failures.append((last[0], line[len("// lowering failed: "):], last[1], last[2]))
    return distinct, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--opprobe", default=os.path.join(os.environ.get("OPPROBE_BUILD_DIR", "build"), "opprobe"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--expected", default=os.path.join(HERE, "sweep_expected.txt"))
    ap.add_argument("--json", default=None, help="write the family's figures here")
    ap.add_argument("--reuse", action="store_true", help="lower the trace already in --work instead of capturing")
    a = ap.parse_args()
    work = a.work or os.path.join(os.environ.get("OPPROBE_BUILD_DIR", "build"), "sweep")
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, a.family + ".json")
    log = os.path.join(work, a.family + ".capture.log")
    if not (a.reuse and os.path.exists(trace)):
        with open(log, "w") as fh:
            p = subprocess.run([a.opprobe, "capture", "-o", trace, "--", a.python,
                                os.path.join(HERE, "sweep_cases.py"), a.family], stdout=fh, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            sys.stderr.write(open(log).read()[-4000:])
            sys.exit("sweep: capturing family %s with %s failed (exit %d); log %s" % (a.family, a.python,
                                                                                   p.returncode, log))
    cases_ok = cases_skipped = 0
    skips = []
    if os.path.exists(log):
        for line in open(log, errors="replace"):
            m = re.match(r"CASES ok=(\d+) skipped=(\d+)", line)
            if m:
                cases_ok, cases_skipped = int(m.group(1)), int(m.group(2))
            if line.startswith("SKIP "):
                skips.append(line[5:].rstrip())
    with open(trace) as fh:
        doc = json.load(fh)
    skipped_ops = doc.get("host_only_ops", doc.get("skipped_ops", {}))  # (the older name)
    distinct, failures = lower(a.opprobe, trace)
    non_aten = {}
    sparse = []
    mismatches = []
    other = []
    for op, reason, sig, where in failures:
        if not op.startswith("aten::"):
            non_aten[op] = non_aten.get(op, 0) + 1
        elif "sparse" in reason and "not supported by XLA" in reason:
            sparse.append((op, reason, sig, where))
        elif "but PyTorch returned" in reason:
            mismatches.append((op, reason, sig, where))
        else:
            other.append((op, reason, sig, where))
    for op, n in skipped_ops.items():
        non_aten[op] = non_aten.get(op, 0) + (n if isinstance(n, int) else 1)
    expected = load_expected(a.expected, a.family)
    seen = set()
    new = []
    expected_calls = 0
    for op, reason, sig, where in mismatches + other:
        key = (op, reason)
        seen.add(key)
        if key in expected:
            expected_calls += 1
        else:
            new.append((op, reason, sig, where))
    fixed = sorted(expected - seen)
    figures = {
        "family": a.family,
        "python": a.python,
        "torch_version": doc.get("torch_version", ""),
        "cases": cases_ok,
        "cases_skipped_by_pytorch": cases_skipped,
        "aten_calls": doc.get("total_calls", 0),
        "distinct_calls": distinct,
        "lowering_failures": len(other),
        "shape_mismatches": len(mismatches),
        "expected_failures": expected_calls,
        "sparse_calls": len(sparse),
        "non_aten_ops": non_aten,
    }
    print("sweep %s (%s, torch %s): %d cases ran (%d raised before finishing, listed below), %d aten calls, "
          "%d distinct; "
          "%d lowering failures and %d shape mismatches (%d of these listed in %s, %d not), %d sparse-layout calls, "
          "%d non-aten ops %s" % (
              a.family, a.python, figures["torch_version"], cases_ok, cases_skipped, figures["aten_calls"], distinct,
              len(other), len(mismatches), expected_calls, os.path.basename(a.expected), len(new), len(sparse),
              len(non_aten), json.dumps(non_aten, sort_keys=True)))
    for s in skips:
        print("  skipped: " + s)
    for op, reason, sig, where in sparse:
        print("  sparse: %s(%s) at %s: %s" % (op, sig, where, reason))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(figures, fh, indent=1, sort_keys=True)
    for op, reason in fixed:
        print("  no longer fails (remove from %s): %s\t%s\t%s" % (os.path.basename(a.expected), a.family, op, reason))
    if new:
        print("NEW failures (not in %s):" % os.path.basename(a.expected))
        for op, reason, sig, where in new:
            print("  %s(%s) at %s: %s" % (op, sig, where, reason))
            print("    expected-list line: %s\t%s\t%s" % (a.family, op, reason))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
