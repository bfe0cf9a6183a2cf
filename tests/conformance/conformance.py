#!/usr/bin/python3
"""The OpInfo conformance suite driver (run through scripts/conformance).

1. gen_samples.py records PyTorch's OpInfo samples as aten calls with real values (float32 plus one
   more dtype per entry);
2. conformance_runner lowers each call, evaluates the HLO with the interp evaluator and compares;
3. this script aggregates per OpInfo entry and per core aten op and writes docs/coverage.md and
   tests/conformance/expectations.txt (default), or, with --check, compares the results with
   expectations.txt and fails when an entry that matched no longer matches.

Exit codes: 0 ok, 1 a regression (--check), 2 usage or a failing step, 77 no torch (skipped).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
EXPECTATIONS = os.path.join(HERE, "expectations.txt")
COVERAGE = os.path.join(ROOT, "docs", "coverage.md")
CORE = os.path.join(ROOT, "analyzer", "lowering", "core_aten_ops.txt")
MODELS = os.path.join(HERE, "models.md")
SWEEP = os.path.join(HERE, "sweep.md")  # the coverage sweep's section (tests/conformance/sweep.py), kept by hand
ZOO = None  # the torch2 tier's model zoos section (tests/torch2/zoo), kept by hand

LOWERING_FAIL = ("no-lowering", "lowering-error")

# What we found out about the entries that do not match; shown after the runner's detail in
# docs/coverage.md (facts checked by hand, see the notes).
KNOWN_CAUSES = {
    "chalf": "complex32 has no XLA element type",
    "linalg.det.singular": "LU of an exactly singular matrix: one pivot is rounding noise whose value depends "
                           "on the order of LAPACK's blocked updates; the determinant itself matches",
    "linalg.eig": "no XLA form: XLA has no nonsymmetric eigendecomposition (JAX calls LAPACK geev, CPU only)",
    "linalg.eigvals": "no XLA form: XLA has no nonsymmetric eigendecomposition (JAX calls LAPACK geev, CPU only)",
    "linalg.ldl_factor": "no XLA form for LAPACK's Bunch-Kaufman sytrf",
    "linalg.ldl_factor_ex": "no XLA form for LAPACK's Bunch-Kaufman sytrf",
    "linalg.ldl_solve": "no XLA form for LAPACK's Bunch-Kaufman sytrs",
    "sparse.sampled_addmm": "sparse layouts have no HLO form",
    "to_sparse": "sparse layouts have no HLO form",
    "special.bessel_j0": "PyTorch 1.13's float64 J0 is off by up to 3e-7 near x = 5.1-5.3 (checked against "
                         "mpmath); ours agrees with mpmath to 1e-16; float32 matches",
    "special.bessel_j1": "PyTorch 1.13's float64 J1 is off by up to 5e-7 near x = 5.1-5.3 (checked against "
                         "mpmath); ours agrees with mpmath; float32 matches",
    "special.bessel_y1": "PyTorch 1.13's float64 Y1 is off by up to 9e-7 near x = 5.1-5.3 (checked against "
                         "mpmath); ours agrees with mpmath; float32 matches",
}


def classify(entry):
    """(status, reason, ops) of one OpInfo entry from the runner's per-call results."""
    ops = collections.OrderedDict()
    calls = [c for s in entry["samples"] for c in s["calls"]]
    errors = [s["error"] for s in entry["samples"] if s.get("error")]
    for c in calls:
        ops.setdefault(c["op"], []).append(c)
    if entry.get("skip"):
        return "no-samples", entry["skip"], ops
    if not calls:
        why = errors[0] if errors else "the samples dispatch no aten op"
        return "no-samples", why, ops
    missing = sorted(set(c["op"] for c in calls if c["status"] in LOWERING_FAIL))
    if missing:
        first = next(c for c in calls if c["status"] in LOWERING_FAIL)
        return "not-lowered", "%s (%s)" % (", ".join(missing), first.get("detail", "")[:160]), ops
    bad = [c for c in calls if c["status"] not in ("match", "not-recorded")]
    if bad:
        c = bad[0]
        return "mismatch", "%s: %s: %s" % (c["op"], c["status"], c.get("detail", "")[:200]), ops
    if all(c["status"] == "not-recorded" for c in calls):
        return "no-samples", "values not recordable", ops
    return "match", "", ops


def read_expectations(path):
    exp = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                name, _, status = line.partition("\t")
                exp[name] = status
    return exp


def core_ops():
    with open(CORE) as f:
        return [l.strip() for l in f if l.strip()]


def md_escape(s):
    return s.replace("|", "\\|").replace("\n", " ")


def ops_table(results):
    """{core op: (lowered, family)} as the runner's lowering table reports it."""
    return {c["op"]: (c["lowered"], c["family"]) for c in results.get("core", [])}


def write_coverage(results, classes, runner_bin, seconds):
    core = core_ops()
    table = ops_table(results)
    lowered_core = sum(1 for op in core if table.get(op, (False,))[0])
    counts = collections.Counter(st for st, _, _ in classes.values())
    with_samples = len(classes) - counts["no-samples"]
    all_lowered = counts["match"] + counts["mismatch"]
    pct = lambda a, b: (100.0 * a / b) if b else 0.0  # noqa: E731
    # Per aten op (name.overload) conformance over all samples.
    per_op = collections.defaultdict(collections.Counter)
    for e in results["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                per_op[c["op"]][c["status"]] += 1
    L = []
    L.append("# Lowering coverage and conformance")
    L.append("")
    L.append("Generated by `scripts/conformance` (tests/conformance/README.md); do not edit by hand.")
    L.append("torch %s OpInfo samples (`op_db`), float32 plus one more dtype per entry (the first of float64, "
             "int64, int32, complex64, bfloat16 it supports), up to %d samples per dtype; each aten call they "
             "dispatch is lowered to HLO and evaluated by the `interp` evaluator on the recorded inputs, then "
             "compared with PyTorch's outputs (atol + rtol·|expected|: f64 1e-7/1e-7, f32 1e-5/1.3e-4, "
             "bf16 1e-2/1.6e-2, integers exact; random ops compare dtype and shape only)."
             % (results.get("torch_version", "?"), results.get("per_dtype", 2)))
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| Figure | Value |")
    L.append("|---|---|")
    L.append("| Core aten ops lowered | %d of %d |" % (lowered_core, len(core)))
    L.append("| OpInfo entries | %d (%d with samples that dispatch aten ops) |" % (len(classes), with_samples))
    L.append("| Entries with all their aten ops lowered | %d of %d (%.1f%%) |"
             % (all_lowered, with_samples, pct(all_lowered, with_samples)))
    L.append("| … of those matching PyTorch | %d of %d (%.1f%%) |"
             % (counts["match"], all_lowered, pct(counts["match"], all_lowered)))
    L.append("| Distinct aten ops seen in the samples | %d |" % len(per_op))
    L.append("| Recording the samples (eager PyTorch) | %.0f s |" % (results.get("record_seconds") or 0))
    L.append("| Lowering + evaluating + comparing | %.0f s |" % (results.get("seconds") or 0))
    L.append("")
    L.append("For comparison (research/lowering.md): torch_xla lowers 156 of the 193 core ops natively; "
             "torchax skips 29 OpInfo entries.")
    L.append("")
    for part in (MODELS, ZOO, SWEEP):
        if part and os.path.exists(part):
            with open(part) as f:
                L.append(f.read().rstrip("\n"))
            L.append("")
    L.append("## Core aten ops")
    L.append("")
    L.append("| Op | Lowered | Family | Calls in samples: match / other |")
    L.append("|---|---|---|---|")
    for op in core:
        lowered, fam = table.get(op, (False, ""))
        keys = [k for k in per_op
                if k[len("aten::"):] == op or (("." not in op) and k[len("aten::"):] == op + ".default")]
        m = sum(per_op[k]["match"] for k in keys)
        other = sum(sum(per_op[k].values()) - per_op[k]["match"] for k in keys)
        seen = "%d / %d" % (m, other) if keys else "not dispatched by the samples"
        L.append("| `%s` | %s | %s | %s |" % (op, "yes" if lowered else "**no**", fam, seen))
    L.append("")
    L.append("## OpInfo entries")
    L.append("")
    L.append("Status: `match` (every aten call lowered and matched), `mismatch` (lowered, but a result "
             "differs or the evaluator failed), `not-lowered` (an aten op without a working lowering), "
             "`no-samples` (nothing to check: the samples fail in eager PyTorch or dispatch no aten op).")
    L.append("")
    L.append("| OpInfo entry | Status | aten ops | Why not |")
    L.append("|---|---|---|---|")
    for name in sorted(classes):
        st, why, ops = classes[name]
        if st in ("mismatch", "not-lowered") and name in KNOWN_CAUSES:
            why = "%s. %s" % (KNOWN_CAUSES[name], why)
        names = ", ".join(o.replace("aten::", "") for o in ops)
        L.append("| `%s` | %s | %s | %s |" % (md_escape(name), st, md_escape(names), md_escape(why)))
    L.append("")
    L.append("## aten ops seen in the samples")
    L.append("")
    L.append("| aten op | match | mismatch | eval-error | not lowered | not recorded |")
    L.append("|---|---|---|---|---|---|")
    for op in sorted(per_op):
        c = per_op[op]
        L.append("| `%s` | %d | %d | %d | %d | %d |" % (op, c["match"], c["mismatch"], c["eval-error"],
                                                   c["no-lowering"] + c["lowering-error"], c["not-recorded"]))
    os.makedirs(os.path.dirname(COVERAGE), exist_ok=True)
    tmp = COVERAGE + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(tmp, COVERAGE)
    return lowered_core, len(core), all_lowered, with_samples, counts["match"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", help="path of the built conformance_runner")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "conformance"), help="folder for samples/results")
    ap.add_argument("--check", action="store_true", help="compare with expectations.txt instead of rewriting")
    ap.add_argument("--per-dtype", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated OpInfo names (for debugging)")
    ap.add_argument("--reuse-samples", action="store_true", help="do not re-record samples.json if present")
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python (with PyTorch) that records the samples")
    ap.add_argument("--tier", default="", help="another PyTorch tier (torch2): writes/compares "
                    "expectations-TIER.txt and docs/coverage-TIER.md, with models-TIER.md")
    a = ap.parse_args()
    global EXPECTATIONS, COVERAGE, MODELS, ZOO
    if a.tier:
        ZOO = os.path.join(ROOT, "tests", a.tier, "zoo", "zoo.md")
        EXPECTATIONS = os.path.join(HERE, "expectations-%s.txt" % a.tier)
        COVERAGE = os.path.join(ROOT, "docs", "coverage-%s.md" % a.tier)
        MODELS = os.path.join(HERE, "models-%s.md" % a.tier)
    python = a.python
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        print("conformance: skipped: %s has no torch" % python)
        return 77
    if not a.runner or not os.path.exists(a.runner):
        print("conformance: --runner must name the built conformance_runner", file=sys.stderr)
        return 2
    os.makedirs(a.work, exist_ok=True)
    samples = os.path.join(a.work, "samples.json")
    results_path = os.path.join(a.work, "results.json")
    t0 = time.time()
    if not (a.reuse_samples and os.path.exists(samples)):
        cmd = [python, os.path.join(HERE, "gen_samples.py"), "-o", samples, "--per-dtype", str(a.per_dtype)]
        if a.only:
            cmd += ["--only", a.only]
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print("conformance: recording the samples failed", file=sys.stderr)
            return 2
    t1 = time.time()
    r = subprocess.run([a.runner, samples, results_path])
    if r.returncode != 0:
        print("conformance: conformance_runner failed", file=sys.stderr)
        return 2
    t2 = time.time()
    with open(results_path) as f:
        results = json.load(f)
    with open(samples) as f:
        sdoc = json.load(f)
    results["torch_version"] = sdoc.get("torch_version")
    results["per_dtype"] = sdoc.get("per_dtype")
    results["record_seconds"] = sdoc.get("seconds")
    classes = {e["name"]: classify(e) for e in results["entries"]}
    print("conformance: recorded in %.0f s, lowered and evaluated in %.0f s" % (t1 - t0, t2 - t1))
    if a.check:
        exp = read_expectations(EXPECTATIONS)
        regressions = []
        for name, st in sorted(exp.items()):
            if st != "match":
                continue
            if a.only and name not in classes:
                continue
            now = classes.get(name)
            if now is None or now[0] != "match":
                regressions.append("%s: was match, now %s%s" % (name, now[0] if now else "missing",
                                                                ": " + now[1] if now and now[1] else ""))
        newly = [n for n, c in classes.items() if c[0] == "match" and exp.get(n) != "match"]
        counts = collections.Counter(c[0] for c in classes.values())
        print("conformance: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
        if newly:
            print("conformance: %d entries match that expectations.txt does not list as matching "
                  "(run scripts/conformance to update): %s" % (len(newly), ", ".join(sorted(newly)[:20])))
        # Issue #12.6: no lowering may disagree with PyTorch about an output's dtype or shape, whatever the entry's
        # expectation says.
        for e in results["entries"]:
            for smp in e.get("samples", []):
                for call in smp.get("calls", []):
                    if "but PyTorch returned" in call.get("detail", ""):
                        regressions.append("%s: shape mismatch: %s" % (e["name"], call["detail"]))
        if regressions:
            print("conformance: %d regressions:" % len(regressions))
            for line in regressions:
                print("  " + line)
            return 1
        return 0
    lowered_core, ncore, all_lowered, with_samples, matching = write_coverage(results, classes, a.runner, t2 - t0)
    tmp = EXPECTATIONS + ".tmp"
    with open(tmp, "w") as f:
        f.write("# OpInfo entry <TAB> status, written by scripts/conformance. The conformance test fails when an\n"
                "# entry listed as `match` stops matching. Regenerate after an intended change: scripts/conformance\n")
        for name in sorted(classes):
            f.write("%s\t%s\n" % (name, classes[name][0]))
    os.replace(tmp, EXPECTATIONS)
    pct = lambda x, y: 100.0 * x / y if y else 0.0  # noqa: E731
    print("conformance: core aten ops lowered %d/%d; OpInfo entries with all aten ops lowered %d/%d (%.1f%%), "
          "of those matching %d (%.1f%%); wrote %s and %s" % (lowered_core, ncore, all_lowered, with_samples,
                                                              pct(all_lowered, with_samples), matching,
                                                              pct(matching, all_lowered),
                                                              os.path.relpath(COVERAGE, ROOT),
                                                              os.path.relpath(EXPECTATIONS, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
