#!/usr/bin/env python3
# The model zoos in the PyTorch 2.x sweep (issue #27.3; docs/coverage-torch2.md "Model zoos"): captures one training
# step of every case of a zoo family (zoo_cases.py: transformers architectures, timm families, diffusers models) with
# `opprobe capture`, lowers every distinct aten call with `opprobe lower` (tests/conformance/sweep.py's reading of its
# output), and fails on any lowering failure, any shape mismatch (a lowering's result against the dtype and shape
# PyTorch recorded), and any case that raised without a rule in zoo_cases.py's EXCLUSIONS saying why.
#
# Usage: zoo.py --family F [--python PY] [--opprobe BIN] [--work DIR] [--shard K/N] [--only A,B] [--json OUT]
#   --python  the zoo environment's interpreter (requirements/zoo.txt: `opprobe_venv zoo`)
#   exit 0: every case ran and lowered completely; 1: a failure (each printed); 2: usage or capture error.
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "conformance"))
import sweep  # noqa: E402  (its `lower`: opprobe lower's distinct calls and failures)


def grouped_query(call):
    """Whether an attention call's key has fewer heads (dim -3) than its query."""
    shapes = {a.get("name"): (a.get("value") or {}).get("shape") for a in call.get("args", [])}
    q, k = shapes.get("query"), shapes.get("key")
    return bool(q and k and len(q) >= 3 and len(k) == len(q) and k[-3] < q[-3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True)
    ap.add_argument("--python", default=os.environ.get("OPPROBE_ZOO_PYTHON", "python3"))
    ap.add_argument("--opprobe", default=os.path.join(os.environ.get("OPPROBE_BUILD_DIR", "build"), "opprobe"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--shard", default=None, help="K/N: the K-th of N interleaved parts of the family's cases")
    ap.add_argument("--only", default=None, help="these cases only (comma-separated)")
    ap.add_argument("--json", default=None, help="write the run's figures here")
    ap.add_argument("--expect", default=None,
                    help="ops (aten::NAME, comma-separated) the trace must hold; `aten::NAME[gqa]`: a call of it whose "
                         "key has fewer heads than its query (grouped-query attention)")
    ap.add_argument("--reuse", action="store_true", help="lower the trace already in --work instead of capturing")
    a = ap.parse_args()
    work = a.work or os.path.join(os.environ.get("OPPROBE_BUILD_DIR", "build"), "zoo")
    os.makedirs(work, exist_ok=True)
    tag = a.family + ("" if not a.shard else "-" + a.shard.replace("/", "of")) + ("" if not a.only else "-only")
    trace = os.path.join(work, tag + ".json")
    log = os.path.join(work, tag + ".capture.log")
    cmd = [a.python, os.path.join(HERE, "zoo_cases.py"), a.family]
    t0 = time.time()
    if a.family == "timm" and not a.only and not (a.reuse and os.path.exists(trace)):
        # timm's cases choose each family's smallest model first, outside the capture (zoo_cases.py --list).
        listing = subprocess.run(cmd + ["--list"] + (["--shard", a.shard] if a.shard else []), stdout=subprocess.PIPE,
                                 universal_newlines=True)
        if listing.returncode != 0:
            sys.exit("zoo: listing timm's models failed (exit %d)" % listing.returncode)
        a.only = ",".join(listing.stdout.split())
    elif a.shard:
        cmd += ["--shard", a.shard]
    if a.only:
        cmd += ["--only", a.only]
    if not (a.reuse and os.path.exists(trace)):
        with open(log, "w") as fh:
            p = subprocess.run([a.opprobe, "capture", "-o", trace, "--"] + cmd, stdout=fh, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            sys.stderr.write(open(log, errors="replace").read()[-4000:])
            sys.exit("zoo: capturing %s with %s failed (exit %d); log %s" % (tag, a.python, p.returncode, log))
    t_capture = time.time() - t0
    ok, raised, excluded = [], [], []
    for line in open(log, errors="replace"):
        m = re.match(r"CASE (\S+) ok", line)
        if m:
            ok.append(m.group(1))
        elif line.startswith("RAISED "):
            raised.append(line[7:].rstrip())
        elif line.startswith("EXCLUDED "):
            excluded.append(line[9:].rstrip())
    if not re.search(r"^ZOO \S+ ok=\d+ raised=\d+", open(log, errors="replace").read(), re.M):
        sys.stderr.write(open(log, errors="replace").read()[-4000:])
        sys.exit("zoo: the capture of %s did not finish its cases; log %s" % (tag, log))
    t1 = time.time()
    with open(trace) as fh:
        doc = json.load(fh)
    distinct, failures = sweep.lower(a.opprobe, trace)
    t_lower = time.time() - t1
    non_aten, mismatches, other = {}, [], []
    for op, reason, sig, where in failures:
        if not op.startswith("aten::"):
            non_aten[op] = non_aten.get(op, 0) + 1
        elif "but PyTorch returned" in reason:
            mismatches.append((op, reason, sig, where))
        else:
            other.append((op, reason, sig, where))
    figures = {
        "family": a.family, "shard": a.shard or "", "torch_version": doc.get("torch_version", ""),
        "cases": len(ok) + len(raised) + len(excluded), "passed": len(ok), "raised": len(raised),
        "excluded": len(excluded), "aten_calls": doc.get("total_calls", 0), "distinct_calls": distinct,
        "lowering_failures": len(other), "shape_mismatches": len(mismatches), "non_aten_ops": non_aten,
        "capture_seconds": round(t_capture, 1), "lower_seconds": round(t_lower, 1),
    }
    print("zoo %s%s (torch %s): %d cases, %d ran their training step, %d excluded by a rule, %d raised; %d aten "
          "calls, %d distinct; %d lowering failures, %d shape mismatches; non-aten ops %s; capture %.0f s, lowering "
          "%.0f s" % (a.family, " shard " + a.shard if a.shard else "", figures["torch_version"], figures["cases"],
                      len(ok), len(excluded), len(raised), figures["aten_calls"], distinct, len(other),
                      len(mismatches), json.dumps(non_aten, sort_keys=True), t_capture, t_lower))
    for e in excluded:
        print("  excluded: " + e)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(figures, fh, indent=1, sort_keys=True)
    bad = False
    for want in (a.expect.split(",") if a.expect else []):
        op, gqa = (want[:-5], True) if want.endswith("[gqa]") else (want, False)
        calls = [c for c in doc.get("calls", []) if c.get("op") == op]
        if gqa:
            calls = [c for c in calls if grouped_query(c)]
        if not calls:
            bad = True
            print("MISSING: the trace has no call of %s%s" % (op, " with fewer key/value heads than query heads"
                                                                if gqa else ""))
    if raised:
        bad = True
        print("RAISED without a rule in zoo_cases.py's EXCLUSIONS:")
        for r in raised:
            print("  " + r)
    if other or mismatches:
        bad = True
        print("LOWERING failures and shape mismatches:")
        seen = set()
        for op, reason, sig, where in other + mismatches:
            if (op, reason) in seen:
                continue
            seen.add((op, reason))
            print("  %s(%s) at %s: %s" % (op, sig, where, reason))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
