"""opprobe's lowering of each aten call of the OpInfo sweep against the HLO the real torch_xla emits for the same call
(torch_xla_calls.py, run under requirements/torch_xla.txt's environment on its CPU PJRT device).

Per call: the (opcode, element type) pairs of both modules (parameters, constants, tuples and get-tuple-elements left
out: torch_xla passes scalars as device data where opprobe uses constants, and wraps outputs in a tuple), the values
(opprobe's lowering evaluated by interp on the recorded inputs, against torch_xla's results, with the conformance
suite's runner and tolerances), and whether the difference changes a verdict: every built-in rules profile judges
opprobe's lowering and torch_xla's module, both read as HLO input, and a call whose two verdicts differ under a profile
changes that profile's verdict. Used by scripts/agreement.py."""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILES = ["cpu", "gpu", "tpu", "neuron-trn1", "neuron-trn2"]
STRUCTURE = {"parameter", "constant", "tuple", "get-tuple-element"}

INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[^\s=]+\s*=\s*"
                         r"(\((?:[^()]|\([^()]*\))*\)|[a-z][a-z0-9]*\[[^\]]*\](?:\{[^}]*\})?)"
                         r"\s+([a-z][a-z0-9-]*)\(")
HEADER = re.compile(r"^// (\S+?)\((.*)\) at call (\d+)$")


def element_types(shape):
    return ",".join(re.findall(r"([a-z][a-z0-9]*)\[", shape)) or "?"


def opcode_types(hlo_text):
    """The set of (opcode, element types) of every instruction of every computation, structure left out."""
    out = set()
    for line in hlo_text.splitlines():
        m = INSTRUCTION.match(line)
        if m and m.group(2) not in STRUCTURE:
            out.add((m.group(2), element_types(m.group(1))))
    return out


def record(python, out, only, log):
    """Runs torch_xla_calls.py until every OpInfo entry is done: an entry during which torch_xla crashes (it takes the
    process with it) is noted in the document's `crashed` and left out of the next run."""
    progress = out + ".progress"
    if os.path.exists(progress):
        os.remove(progress)
    names, torch_version, samples, crashed, left = [], None, collections.OrderedDict(), {}, list(only)
    while True:
        cmd = [python, os.path.join(HERE, "torch_xla_calls.py"), "-o", out + ".partial", "--per-dtype", "2",
               "--progress", progress]
        if left:
            cmd += ["--only", ",".join(left)]
        log("recording the OpInfo sweep under torch_xla ({}{})".format(
            python, ", {} entries".format(len(left)) if left else ""))
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        started, earlier = None, set(samples)  # an entry done by an earlier run may be matched again by --only
        with open(progress) as f:
            for line in f:
                rec = json.loads(line)
                if "entries" in rec:
                    names, torch_version = rec["entries"], rec["torch_version"]
                elif "start" in rec:
                    started = rec["start"] if rec["start"] not in earlier else None
                    if started:
                        samples.setdefault(started, [])
                elif rec["entry"] not in earlier:
                    samples[rec["entry"]].append({"dtype": rec["dtype"], "calls": rec["calls"], "error": rec["error"]})
                    started = None
        os.remove(progress)
        if r.returncode == 0:
            break
        if started is None or not names:
            sys.exit("agreement: recording under torch_xla failed (exit {}): {}".format(r.returncode, r.stdout[-1500:]))
        crashed[started] = "torch_xla ended the process ({})".format(
            "signal {}".format(-r.returncode) if r.returncode < 0 else "exit {}".format(r.returncode))
        log("torch_xla crashed on OpInfo entry {}: {}".format(started, crashed[started]))
        wanted = [n for n in names if not only or n in only or n.split(".")[0] in only]
        left = [n for n in wanted if n not in samples and n not in crashed]
        if not left:
            break
    doc = {"format": "opprobe-conformance-samples", "version": 1, "torch_version": torch_version, "per_dtype": 2,
           "entries": [{"name": n, "samples": s} for n, s in samples.items()], "crashed": crashed}
    with open(out, "w") as f:
        json.dump(doc, f)
    if os.path.exists(out + ".partial"):
        os.remove(out + ".partial")


def calls_of(doc):
    """[(entry name, call)] of the calls torch_xla replayed, each distinct call once (samples repeat calls)."""
    out, seen = [], set()
    for e in doc["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                key = json.dumps([c[k] for k in ("op", "overload", "args", "outputs")], sort_keys=True)
                if "torch_xla" in c and key not in seen:
                    seen.add(key)
                    out.append((e["name"], c))
    return out


def run_json(cmd, out):
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if not os.path.exists(out):
        sys.exit("agreement: {} failed (exit {}): {}".format(" ".join(cmd[:4]), r.returncode, r.stderr[-800:]))
    with open(out) as f:
        return json.load(f)


def lowerings(opprobe, trace):
    """{call index: (header signature, HLO text or None, lowering failure or None)} from `opprobe lower`."""
    r = subprocess.run([opprobe, "lower", trace], cwd=ROOT, capture_output=True, text=True)
    if r.returncode not in (0, 1, 2) or not r.stdout:
        sys.exit("agreement: opprobe lower failed (exit {}): {}".format(r.returncode, r.stderr[-800:]))
    out, cur, lines = {}, None, []

    def flush():
        if cur is not None:
            text = "\n".join(lines)
            failed = re.search(r"^// lowering failed: (.*)$", text, re.M)
            out[cur[0]] = (cur[1], None if failed else text, failed.group(1) if failed else None)

    for line in r.stdout.splitlines():
        m = HEADER.match(line)
        if m:
            flush()
            cur, lines = (int(m.group(3)), m.group(1) + "(" + m.group(2) + ")"), []
        else:
            lines.append(line)
    flush()
    return out


def unsupported_programs(opprobe, folder, profile, report):
    """File stems of the HLO files in `folder` with an unsupported instruction under rules:profile."""
    if not os.listdir(folder):
        return set()
    doc = run_json([opprobe, "analyze", folder, "--backend", "rules:" + profile, "--no-cache", "--no-progress", "-q",
                    "-o", report], report)
    bad = set()
    for p in doc.get("programs", []):
        m = re.search(r"\((\d+)\.hlo\)$", p["name"])
        if m and p["supported_instructions"] < p["hlo_instructions"]:
            bad.add(int(m.group(1)))
    return bad


def conformance(runner, doc, path, results_path):
    with open(path, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([runner, path, results_path], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("agreement: conformance_runner failed (exit {}): {}".format(r.returncode, r.stderr[-800:]))
    with open(results_path) as f:
        res = json.load(f)
    return [c for e in res["entries"] for s in e.get("samples", []) for c in s.get("calls", [])]


def compare(opprobe, runner, samples_path, work):
    """Per replayed call: {entry, op, signature, status, missing, extra, results, verdicts{profile: (opprobe, xla)}}."""
    with open(samples_path) as f:
        doc = json.load(f)
    calls = calls_of(doc)
    # One trace of every replayed call (loc `call N`, so `opprobe lower` and reports name each one).
    trace = os.path.join(work, "torch_xla_calls.trace.json")
    with open(trace, "w") as f:
        json.dump({"format": "opprobe-trace", "version": 1, "torch_version": doc.get("torch_version"), "status": "ok",
                   "calls": [dict({k: c[k] for k in ("op", "overload", "args", "outputs", "count")},
                                  loc={"file": "call", "line": i + 1}) for i, (_, c) in enumerate(calls)]}, f)
    lowered = lowerings(opprobe, trace)

    # Values: opprobe's lowering (interp) against PyTorch, then against torch_xla's results.
    with_xla = json.loads(json.dumps(doc))
    for e in with_xla["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                x = c.get("torch_xla", {})
                if ("results" in c and "results" in x and len(x["results"]) == len(c["results"])
                        and None not in x["results"]):
                    c["results"] = x["results"]
                elif "results" in c:
                    c["skip"] = "torch_xla returned no comparable values"
                    c.pop("results")
                c.pop("torch_xla", None)
    plain = json.loads(json.dumps(doc))
    for e in plain["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                c.pop("torch_xla", None)
    vs_xla = conformance(runner, with_xla, os.path.join(work, "runner-torch_xla.json"),
                         os.path.join(work, "runner-torch_xla.results.json"))
    vs_torch = conformance(runner, plain, os.path.join(work, "runner-torch.json"),
                           os.path.join(work, "runner-torch.results.json"))
    all_calls = [c for e in doc["entries"] for s in e["samples"] for c in s["calls"]]
    status_xla = {id(c): r.get("status") for c, r in zip(all_calls, vs_xla)}
    status_torch = {id(c): r.get("status") for c, r in zip(all_calls, vs_torch)}
    detail_xla = {id(c): r.get("detail", "") for c, r in zip(all_calls, vs_xla)}

    # Verdicts under every rules profile, both modules read the same way (as HLO files: constants are units too).
    verdicts = {}
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"opprobe": os.path.join(tmp, "opprobe"), "torch_xla": os.path.join(tmp, "torch_xla")}
        for f in folders.values():
            os.makedirs(f)
        for i, (_, c) in enumerate(calls):
            x, mine = c["torch_xla"], lowered.get(i + 1, (None, None, None))[1]
            if x.get("hlo") and not x.get("fallback") and not x.get("error") and mine:
                for side, text in (("opprobe", mine), ("torch_xla", x["hlo"])):
                    with open(os.path.join(folders[side], "{}.hlo".format(i + 1)), "w") as f:
                        f.write(text)
        report = os.path.join(tmp, "report.json")
        for p in PROFILES:
            verdicts[p] = (unsupported_programs(opprobe, folders["opprobe"], p, report),
                           unsupported_programs(opprobe, folders["torch_xla"], p, report))

    out = []
    for i, (entry, c) in enumerate(calls):
        idx = i + 1
        x = c["torch_xla"]
        sig, text, failure = lowered.get(idx, ("{}.{}".format(c["op"], c["overload"]), None,
                                               "opprobe lowered it together with an earlier identical call"))
        r = {"entry": entry, "op": c["op"] + ("." + c["overload"] if c["overload"] not in ("", "default") else ""),
             "signature": sig, "missing": [], "extra": [], "verdicts": {}, "results": None, "detail": ""}
        if x.get("error"):
            r["status"], r["detail"] = "torch_xla error", x["error"]
        elif x.get("fallback"):
            r["status"], r["detail"] = "torch_xla CPU fallback", ", ".join(x["fallback"])
        elif failure:
            r["status"], r["detail"] = "not lowered", failure
        elif not x.get("hlo"):
            r["status"] = "no XLA output"
        else:
            mine, theirs = opcode_types(text), opcode_types(x["hlo"])
            r["missing"] = sorted(theirs - mine)  # torch_xla has, opprobe does not
            r["extra"] = sorted(mine - theirs)
            r["status"] = "same HLO" if not r["missing"] and not r["extra"] else "HLO differs"
            for p in PROFILES:
                a, b = idx in verdicts[p][0], idx in verdicts[p][1]
                if a != b:
                    r["verdicts"][p] = ("unsupported" if a else "supported", "unsupported" if b else "supported")
        st = status_xla.get(id(c))
        if st in ("match", "mismatch"):
            r["results"] = st
            if st == "mismatch":
                r["detail"] = (r["detail"] + "; " if r["detail"] else "") + detail_xla.get(id(c), "")
                r["torch"] = status_torch.get(id(c))
        out.append(r)
    return out


def figures(rows):
    f = collections.Counter()
    for r in rows:
        f["txla_calls"] += 1
        f["txla_" + r["status"].replace(" ", "_").replace("torch_xla_", "")] += 1
        if r["results"]:
            f["txla_results_" + r["results"]] += 1
        if r["verdicts"]:
            f["txla_verdict_changes"] += 1
    return dict(sorted(f.items()))


HIGHER_IS_BETTER = ["txla_same_HLO", "txla_results_match"]
LOWER_IS_BETTER = ["txla_verdict_changes", "txla_results_mismatch"]


def pairs(ps):
    return ", ".join("{} {}".format(o, t) for o, t in ps) or "nothing"


def doc_section(rows, explain, md):
    """Markdown lines for docs/agreement.md; explain(row) gives the known reason of a difference or None."""
    f = figures(rows)
    per_op = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: r["op"]):
        per_op.setdefault(r["op"], []).append(r)
    L = ["## Lowerings against torch_xla's", "",
         "Every aten call of the OpInfo sweep (recorded with torch 2.9's OpInfo samples by",
         "tests/agreement/torch_xla_calls.py) replayed on the real torch_xla 2.9.0 (requirements/torch_xla.txt, CPU "
         "PJRT",
         "device), against opprobe's lowering of the same call (tests/agreement/torch_xla_compare.py). *Same HLO*: the",
         "same (opcode, element type) pairs, parameters, constants and tuples aside. *Results*: opprobe's lowering",
         "evaluated by interp on the recorded inputs against torch_xla's values (the conformance suite's tolerances).",
         "*Changes a verdict*: a built-in rules profile judges opprobe's lowering and torch_xla's module "
         "differently.", "",
         "| figure | calls |", "| --- | --- |"]
    for k, v in f.items():
        L.append("| {} | {} |".format(k, v))
    L += ["", "### Calls whose HLO differs and changes a verdict", ""]
    changing = [(op, rs) for op, rs in per_op.items() if any(r["verdicts"] for r in rs)]
    if not changing:
        L.append("None.")
    for op, rs in changing:
        r = next(r for r in rs if r["verdicts"])
        why = explain(r)
        L.append("- `{}` ({} of {} calls): e.g. `{}`: torch_xla has {}; opprobe has {}; {}.{}".format(
            op, sum(1 for x in rs if x["verdicts"]), len(rs), md(r["signature"][:120]), pairs(r["missing"]),
            pairs(r["extra"]), "; ".join("rules:{} says {} for opprobe's, {} for torch_xla's".format(p, a, b)
                                         for p, (a, b) in sorted(r["verdicts"].items())),
            " **Why:** " + why if why else " **Why:** not known yet."))
    L += ["", "### Other calls whose HLO differs (no verdict changes)", ""]
    other = [(op, rs) for op, rs in per_op.items() if not any(r["verdicts"] for r in rs)
             and any(r["status"] == "HLO differs" for r in rs)]
    if not other:
        L.append("None.")
    for op, rs in other:
        r = next(r for r in rs if r["status"] == "HLO differs")
        why = explain(r)
        L.append("- `{}` ({} of {} calls): torch_xla has {}; opprobe has {}.{}".format(
            op, sum(1 for x in rs if x["status"] == "HLO differs"), len(rs), pairs(r["missing"]), pairs(r["extra"]),
            " " + why if why else ""))
    L += ["", "### torch_xla runs on the CPU instead (fallback) or refuses", ""]
    fb = [(op, rs) for op, rs in per_op.items() if any(r["status"] in ("torch_xla CPU fallback", "torch_xla error")
                                                       for r in rs)]
    if not fb:
        L.append("None.")
    for op, rs in fb:
        r = next(r for r in rs if r["status"] in ("torch_xla CPU fallback", "torch_xla error"))
        L.append("- `{}` ({} of {} calls): {}: {}".format(op, sum(1 for x in rs if x["status"] == r["status"]), len(rs),
                                                           r["status"], md(r["detail"][:200])))
    L += ["", "### Results that differ from torch_xla's", ""]
    bad = [(op, rs) for op, rs in per_op.items() if any(r["results"] == "mismatch" for r in rs)]
    if not bad:
        L.append("None.")
    for op, rs in bad:
        r = next(r for r in rs if r["results"] == "mismatch")
        L.append("- `{}` ({} of {} calls): {}; opprobe against PyTorch itself: {}.".format(
            op, sum(1 for x in rs if x["results"] == "mismatch"), len(rs), md(r["detail"][:240]), r.get("torch")))
    return L
