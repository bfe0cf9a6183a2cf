"""opprobe's lowering of each aten call of the OpInfo sweep against torchax's own lowering of the same call
(capture/opprobe_capture/torchax_lower.py run with requirements/torchax.txt's Python: torchax's op table through JAX to
StableHLO, as `opprobe analyze --lowering torchax` lowers a script's calls).

Per call: whether torchax lowers it (a call it cannot lower is what `--lowering torchax` reports with failureAt
torchax), the (opcode, element type) pairs of both modules (JAX's own HLO text of torchax's module; parameters,
constants, tuples and get-tuple-elements left out, as for torch_xla), and whether the difference changes a verdict:
every built-in rules profile judges opprobe's lowering (its HLO) and torchax's module (its StableHLO, converted by
opprobe's StableHLO reader, the path --lowering torchax takes), and a call whose two verdicts differ under a profile
changes that profile's verdict. Values are not compared. Used by scripts/agreement.py."""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch_xla_compare as txla  # noqa: E402  (the calls, opprobe's lowerings, the pairs, the verdicts)

LOWER = os.path.join(ROOT, "capture", "opprobe_capture")  # run as `python LOWER torchax-lower ...`


def record(python, out, only, log):
    """The OpInfo sweep's aten calls with PyTorch 2.x (tests/conformance/gen_samples.py, run by the torchax Python)."""
    cmd = [python, os.path.join(ROOT, "tests", "conformance", "gen_samples.py"), "-o", out, "--per-dtype", "2"]
    if only:
        cmd += ["--only", ",".join(only)]
    log("recording the OpInfo sweep with {}{}".format(python, " ({} entries)".format(len(only)) if only else ""))
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("agreement: recording the OpInfo samples for torchax failed: " + r.stdout[-800:])


def calls_of(doc):
    """[(entry name, call)]: each distinct call of the samples once."""
    out, seen = [], set()
    for e in doc["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                key = json.dumps([c[k] for k in ("op", "overload", "args", "outputs")], sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    out.append((e["name"], c))
    return out


def unsupported(opprobe, files, profile, report, unreadable):
    """Indices N of the files (`N.hlo` with opprobe's HLO, `N.mlir` with torchax's module renamed call_N) with an
    unsupported instruction under rules:profile. A file opprobe cannot read is left out, with its message, in
    `unreadable` (index -> message)."""
    bad, left = set(), [f for f in files]
    while left:
        chunk, left = left[:400], left[400:]  # a command line of bounded length
        if os.path.exists(report):
            os.remove(report)
        r = subprocess.run([opprobe, "analyze"] + chunk + ["--backend", "rules:" + profile, "--no-cache",
                                                            "--no-progress", "-q", "-o", report],
                           cwd=ROOT, capture_output=True, text=True)
        if not os.path.exists(report):
            m = re.search(r"(/\S+/(\d+)\.(?:hlo|mlir))\b", r.stderr)
            if not m or m.group(1) not in chunk:
                sys.exit("agreement: {} failed (exit {}): {}".format(" ".join([opprobe, "analyze"] + chunk[:2]),
                                                                      r.returncode, r.stderr[-800:]))
            unreadable[int(m.group(2))] = r.stderr.strip().splitlines()[-1][:300]
            left = [f for f in chunk if f != m.group(1)] + left
            continue
        with open(report) as f:
            doc = json.load(f)
        for p in doc.get("programs", []):
            m = re.search(r"(?:call_(\d+)$|\((\d+)\.hlo\)$)", p["name"])
            if m and p["supported_instructions"] < p["hlo_instructions"]:
                bad.add(int(m.group(1) or m.group(2)))
        if len(chunk) == 1 and not doc.get("programs"):
            pass
    return bad


def compare(opprobe, python, samples_path, work, log):
    """Per call: {entry, op, signature, status, detail, missing, extra, verdicts{profile: (opprobe, torchax)}}."""
    with open(samples_path) as f:
        doc = json.load(f)
    calls = calls_of(doc)
    trace = os.path.join(work, "torchax_calls.trace.json")
    with open(trace, "w") as f:
        json.dump({"format": "opprobe-trace", "version": 1, "torch_version": doc.get("torch_version"), "status": "ok",
                   "calls": [dict({k: c[k] for k in ("op", "overload", "args", "outputs", "count")},
                                  loc={"file": "call", "line": i + 1}) for i, (_, c) in enumerate(calls)]}, f)
    lowered = txla.lowerings(opprobe, trace)
    log("lowering {} calls with torchax".format(len(calls)))
    out = os.path.join(work, "torchax_lowerings.json")
    theirs = txla.run_json([python, LOWER, "torchax-lower", "--hlo", trace, out], out)
    version = theirs.get("torchax", "?")

    verdicts = {}
    with tempfile.TemporaryDirectory() as tmp:
        mine_dir, theirs_dir = os.path.join(tmp, "opprobe"), os.path.join(tmp, "torchax")
        os.makedirs(mine_dir)
        os.makedirs(theirs_dir)
        mlir_files, hlo_files = [], []
        for i in range(len(calls)):
            t, mine = theirs["calls"][i], lowered.get(i + 1, (None, None, None))[1]
            if t.get("mlir") and mine:
                with open(os.path.join(mine_dir, "{}.hlo".format(i + 1)), "w") as f:
                    f.write(mine)
                hlo_files.append(os.path.join(mine_dir, "{}.hlo".format(i + 1)))
                path = os.path.join(theirs_dir, "{}.mlir".format(i + 1))
                with open(path, "w") as f:
                    f.write(re.sub(r"^module @\S+", "module @call_{}".format(i + 1), t["mlir"], count=1, flags=re.M))
                mlir_files.append(path)
        report = os.path.join(tmp, "report.json")
        unreadable_mine, unreadable_theirs = {}, {}
        for p in txla.PROFILES:
            verdicts[p] = (unsupported(opprobe, hlo_files, p, report, unreadable_mine),
                           unsupported(opprobe, mlir_files, p, report, unreadable_theirs))

    out = []
    for i, (entry, c) in enumerate(calls):
        idx = i + 1
        t = theirs["calls"][i]
        sig, text, failure = lowered.get(idx, ("{}.{}".format(c["op"], c["overload"]), None,
                                               "opprobe lowered it together with an earlier identical call"))
        r = {"entry": entry, "op": c["op"] + ("." + c["overload"] if c["overload"] not in ("", "default") else ""),
             "signature": sig, "missing": [], "extra": [], "verdicts": {}, "detail": ""}
        if t.get("error"):
            r["status"], r["detail"] = ("torchax lacks" if "OperatorNotFound" in t["error"] else "torchax fails",
                                        t["error"])
        elif failure:
            r["status"], r["detail"] = "not lowered", failure
        elif idx in unreadable_theirs:
            r["status"], r["detail"] = "unreadable", "opprobe's StableHLO reader: " + unreadable_theirs[idx]
        else:
            if idx in unreadable_mine:
                r["detail"] = "opprobe's HLO does not read back: " + unreadable_mine[idx]
            mine, them = txla.opcode_types(text), txla.opcode_types(t.get("hlo") or "")
            r["missing"] = sorted(them - mine)  # torchax has, opprobe does not
            r["extra"] = sorted(mine - them)
            r["status"] = "same HLO" if not r["missing"] and not r["extra"] else "HLO differs"
            for p in txla.PROFILES if idx not in unreadable_mine else []:
                a, b = idx in verdicts[p][0], idx in verdicts[p][1]
                if a != b:
                    r["verdicts"][p] = ("unsupported" if a else "supported", "unsupported" if b else "supported")
        out.append(r)
    return out, version


def figures(rows):
    f = collections.Counter()
    for r in rows:
        f["tax_calls"] += 1
        f["tax_" + r["status"].replace(" ", "_").replace("torchax_", "")] += 1
        if r["verdicts"]:
            f["tax_verdict_changes"] += 1
            if any(op == "custom-call" for op, _ in r["missing"]):
                f["tax_verdict_changes_custom_call"] += 1  # torchax's module has a custom call (LAPACK on the CPU)
            elif any("c64" in t or "c128" in t for _, t in r["missing"] + r["extra"]):
                f["tax_verdict_changes_complex"] += 1  # complex types, which the Neuron profiles refuse
    return dict(sorted(f.items()))


HIGHER_IS_BETTER = ["tax_same_HLO"]
LOWER_IS_BETTER = ["tax_verdict_changes", "tax_not_lowered", "tax_unreadable"]


def doc_section(rows, version, md):
    """Markdown lines for docs/agreement.md."""
    f = figures(rows)
    per_op = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: r["op"]):
        per_op.setdefault(r["op"], []).append(r)
    L = ["## Lowerings against torchax's", "",
         "Every aten call of the OpInfo sweep (torch 2.9's OpInfo samples, tests/conformance/gen_samples.py) lowered "
         "by",
         "the real torchax {} (requirements/torchax.txt: its op table through JAX to StableHLO, as".format(version),
         "`analyze --lowering torchax` lowers a script's calls) against opprobe's lowering of the same call",
         "(tests/agreement/torchax_compare.py). *Lacks*: torchax has no lowering for the op (OperatorNotFound), what",
         "`--lowering torchax` reports with failureAt torchax; *fails*: torchax has one and it raises on this call.",
         "*Same HLO*: the same (opcode, element type) pairs (JAX's HLO of torchax's module), parameters, constants and",
         "tuples aside. *Changes a verdict*: a built-in rules profile judges opprobe's lowering and torchax's module",
         "(read by opprobe's StableHLO reader) differently. Values are not compared. torchax's modules are JAX's for",
         "its CPU platform here (`--lowering torchax` exports for the target's: tpu for tpu: and rules:tpu, cuda for",
         "gpu:), so its linear algebra is LAPACK custom calls (`lapack_*_ffi`), which the TPU, GPU and Neuron profiles",
         "refuse: `tax_verdict_changes_custom_call` counts the verdict changes where torchax's module has a custom "
         "call,",
         "`tax_verdict_changes_complex` those (of the rest) with complex types, which the Neuron profiles refuse.", "",
         "| figure | calls |", "| --- | --- |"]
    for k, v in f.items():
        L.append("| {} | {} |".format(k, v))
    L += ["", "### Calls whose HLO differs and changes a verdict", ""]
    changing = [(op, rs) for op, rs in per_op.items() if any(r["verdicts"] for r in rs)]
    if not changing:
        L.append("None.")
    for op, rs in changing:
        r = next(r for r in rs if r["verdicts"])
        L.append("- `{}` ({} of {} calls): e.g. `{}`: torchax has {}; opprobe has {}; {}.".format(
            op, sum(1 for x in rs if x["verdicts"]), len(rs), md(r["signature"][:120]), txla.pairs(r["missing"]),
            txla.pairs(r["extra"]), "; ".join("rules:{} says {} for opprobe's, {} for torchax's".format(p, a, b)
                                              for p, (a, b) in sorted(r["verdicts"].items()))))
    for title, status in (("torchax has no lowering (what --lowering torchax lists)", "torchax lacks"),
                          ("torchax's lowering raises on the call", "torchax fails"),
                          ("opprobe has no lowering where torchax has one", "not lowered"),
                          ("torchax's module that opprobe's StableHLO reader cannot read", "unreadable")):
        L += ["", "### " + title[0].upper() + title[1:], ""]
        some = [(op, rs) for op, rs in per_op.items() if any(r["status"] == status for r in rs)]
        if not some:
            L.append("None.")
        for op, rs in some:
            r = next(r for r in rs if r["status"] == status)
            L.append("- `{}` ({} of {} calls): {}".format(op, sum(1 for x in rs if x["status"] == status), len(rs),
                                                         md(r["detail"][:200])))
    return L
