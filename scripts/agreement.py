"""Measures opprobe's verdict sources against real compilers: runs the probe units of XLA's corpus dumps, the bundled
traces, the seeds' scripts, the OpInfo sweep and the model sweeps through interp, rules:cpu, xla:cpu and
iree:llvm-cpu, checks that a profile recorded from xla:cpu reproduces xla:cpu, and writes docs/agreement.md
(see scripts/agreement for the usage)."""

import argparse
import collections
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFORMANCE = os.path.join(ROOT, "tests", "conformance")
sys.path.insert(0, os.path.join(ROOT, "tests", "agreement"))
import explanations  # noqa: E402  (why a unit's verdicts differ: tests/agreement/explanations.py)
import torch_xla_compare as txla  # noqa: E402  (opprobe's lowerings against torch_xla's HLO)
import torchax_compare as tax  # noqa: E402  (opprobe's lowerings against torchax's)

BACKENDS = ["interp", "rules:cpu", "xla:cpu", "iree:llvm-cpu"]
SHORT = {"interp": "interp", "rules:cpu": "rules", "xla:cpu": "xla", "iree:llvm-cpu": "iree"}
# Pairs whose supported/unsupported answers are compared; xla:cpu is the reference, IREE the second compiler.
PAIRS = [("interp", "xla:cpu"), ("rules:cpu", "xla:cpu"), ("iree:llvm-cpu", "xla:cpu"), ("interp", "iree:llvm-cpu"),
         ("rules:cpu", "iree:llvm-cpu")]
EXECUTING = ["xla:cpu", "iree:llvm-cpu"]  # compiled, run and compared with interp
PROFILE = "recorded"  # the rules profile `opprobe profile record` writes from xla:cpu's verdicts
FIGURES_BEGIN, FIGURES_END = "<!-- quick-figures", "-->"

# The real chips' compilers (`--part chips`): the same units through XLA's TPU compiler (libtpu) for three TPU
# generations and XLA's GPU compiler for two NVIDIA devices, each compiling with no chip present (tpu:GEN, gpu:DEVICE),
# against the rules profiles a CI machine without those compilers uses instead. The first target of each family is
# the one its profile is recorded from.
CHIP_TARGETS = ["tpu:v5e", "tpu:v4", "tpu:v6e", "gpu:h100", "gpu:a100"]
PROFILES = os.path.join(ROOT, "compiler_probe", "rules", "profiles")
CHIPS_BEGIN, CHIPS_END = "<!-- chips-begin -->", "<!-- chips-end -->"
CHIP_FIGURES_BEGIN = "<!-- chips-quick-figures"
# The section on torchax's lowering (`--part torchax` rewrites it alone; its quick figures inside it).
TORCHAX_BEGIN, TORCHAX_END = "<!-- torchax-begin -->", "<!-- torchax-end -->"
TORCHAX_FIGURES_BEGIN = "<!-- torchax-quick-figures"
# Hand-written units for the profiles' rules that no agreement unit exercises (tests/agreement/chip_units/README.md):
# compiled with every chip target beside the agreement units, listed apart and counted in no agreement figure of them.
CHIP_EVIDENCE = os.path.join(ROOT, "tests", "agreement", "chip_units")

# The quick subset the ctest entry checks: the bundled traces, three small corpus dumps and a slice of the OpInfo
# sweep. The full set adds every corpus dump, the seeds' scripts, the whole OpInfo sweep and the model sweeps.
QUICK_FILES = ["samples/traces/supported.json", "samples/traces/unsupported.json",
               "../shared/corpus/hlo/jax_tpu_module_0000.jit_iota.before_optimizations.txt",
               "../shared/corpus/hlo/jax_tpu_module_0002.jit_f.before_optimizations.txt",
               "../shared/corpus/hlo/torch_xla_neuron_linear_SyncTensorsGraph.75.hlo.txt"]
QUICK_OPINFO = ["add", "mul", "div", "tanh", "sigmoid", "sum", "amax", "matmul", "nn.functional.conv2d", "where",
                "cumsum", "sort", "argmax", "nn.functional.max_pool2d", "index_select", "remainder", "pow", "erf"]
# Left out of the full set for time: their units are large (BERT's vocabulary-sized dots, FSDP's 2 MB dump), and
# interp's reference evaluation of each takes minutes on a CI machine.
TOO_SLOW = {"torch_xla_neuron_bert_SyncTensorsGraph.1864.hlo.txt", "torch_xla_fsdp_mnist_bf16.hlo_dump.txt"}
# The model sweeps (tests/conformance/README.md): every family of the coverage sweep and the training steps of
# docs/coverage.md's models, captured with Debian's PyTorch 1.13.
SWEEP_FAMILIES = ["nn", "factory", "audio_transforms", "audio_models", "vision_classification1",
                  "vision_classification2", "vision_classification3", "vision_detection", "vision_video"]
MODELS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16", "swin_t", "convnext_tiny", "densenet121",
          "wav2vec2_base", "conformer"]
TORCH = "/usr/bin/python3"
SOURCES = ["corpus", "traces", "scripts", "opinfo", "sweeps", "models"]
# The model sweeps hold tens of thousands of units that differ mostly in shapes (IREE takes about half a second of CPU
# per unit): of the units only they have, PER_CLASS units per class (the signature with its numbers left out) are
# probed. Every unit of the other sources is probed.
SAMPLED = ["sweeps", "models"]
PER_CLASS = 2
SOURCE_TITLES = {
    "corpus": "XLA's corpus dumps (`../shared/corpus/hlo`)",
    "traces": "the bundled traces (`samples/traces`)",
    "scripts": "the seeds' scripts (`samples/scripts/*.py`, captured)",
    "opinfo": "the OpInfo sweep (`tests/conformance/gen_samples.py`: every aten call of PyTorch's OpInfo samples)",
    "sweeps": "the coverage sweep's families (`tests/conformance/sweep_cases.py`)",
    "models": "the models' training steps (`tests/conformance/models_train.py`)",
}


def _duration(seconds):
    """`1 minute`, `3 minutes`, `45 seconds`: how long a run took, for the doc's prose."""
    if seconds < 90:
        return "%d seconds" % round(seconds)
    minutes = round(seconds / 60)
    return "%d minute%s" % (minutes, "" if minutes == 1 else "s")


def log(msg):
    print("agreement: " + msg, flush=True)


def capture(opprobe, out, argv, reuse):
    if reuse and os.path.exists(out):
        return out
    log("capturing " + " ".join(os.path.relpath(x, ROOT) if os.path.isabs(x) else x for x in argv[1:]))
    r = subprocess.run([opprobe, "capture", "-o", out, "--"] + argv, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0 or not os.path.exists(out):
        sys.exit("agreement: capturing {} failed (exit {}): {}".format(" ".join(argv), r.returncode, r.stdout[-800:]))
    return out


def opinfo_trace(work, only, reuse):
    """The OpInfo sweep's aten calls (gen_samples.py, as the conformance suite records them) as one trace."""
    samples = os.path.join(work, "opinfo-samples.json")
    trace = os.path.join(work, "opinfo.json")
    if reuse and os.path.exists(trace):
        return trace
    log("recording the OpInfo sweep" + (" (" + ", ".join(only) + ")" if only else ""))
    cmd = [TORCH, os.path.join(CONFORMANCE, "gen_samples.py"), "-o", samples, "--per-dtype", "2"]
    if only:
        cmd += ["--only", ",".join(only)]
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("agreement: recording the OpInfo samples failed: " + r.stdout[-800:])
    with open(samples) as f:
        doc = json.load(f)
    calls, seen = [], set()
    for e in doc["entries"]:
        for s in e["samples"]:
            for c in s["calls"]:
                call = {k: c[k] for k in ("op", "overload", "args", "outputs", "count")}
                key = json.dumps(call, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    call["loc"] = {"file": "opinfo/" + e["name"], "line": 1}
                    calls.append(call)
    with open(trace, "w") as f:
        json.dump({"format": "opprobe-trace", "version": 1, "torch_version": doc.get("torch_version"),
                   "status": "ok", "calls": calls}, f)
    return trace


def inputs_for(opprobe, work, quick, reuse, sources):
    """[(source, label, path)] of the set."""
    out = []
    traces = os.path.join(work, "traces")
    os.makedirs(traces, exist_ok=True)
    if quick:
        for p in QUICK_FILES:
            out.append(("traces" if p.startswith("samples/") else "corpus", os.path.basename(p), p))
        out.append(("opinfo", "OpInfo: " + ", ".join(QUICK_OPINFO), opinfo_trace(work, QUICK_OPINFO, False)))
        return out
    if "corpus" in sources:
        corpus = os.path.join(ROOT, "..", "shared", "corpus", "hlo")
        for f in sorted(os.listdir(corpus)):
            if f.endswith(".txt") and f not in TOO_SLOW:
                out.append(("corpus", f, "../shared/corpus/hlo/" + f))
    if "traces" in sources:
        for f in sorted(os.listdir(os.path.join(ROOT, "samples", "traces"))):
            if f.endswith(".json"):
                out.append(("traces", f, "samples/traces/" + f))
    if "scripts" in sources:
        for f in sorted(os.listdir(os.path.join(ROOT, "samples", "scripts"))):
            if f.endswith(".py"):
                path = capture(opprobe, os.path.join(traces, "script_" + f[:-3] + ".json"),
                               [TORCH, "samples/scripts/" + f], reuse)
                out.append(("scripts", f, path))
    if "opinfo" in sources:
        out.append(("opinfo", "OpInfo sweep (every entry, 2 samples per dtype)", opinfo_trace(work, [], reuse)))
    if "sweeps" in sources:
        for fam in SWEEP_FAMILIES:
            path = capture(opprobe, os.path.join(traces, "sweep_" + fam + ".json"),
                           [TORCH, os.path.join(CONFORMANCE, "sweep_cases.py"), fam], reuse)
            out.append(("sweeps", "sweep " + fam, path))
    if "models" in sources:
        for m in MODELS:
            path = capture(opprobe, os.path.join(traces, "model_" + m + ".json"),
                           [TORCH, os.path.join(CONFORMANCE, "models_train.py"), m], reuse)
            out.append(("models", m, path))
    return out


def analyze(opprobe, inp, backend, cache, out):
    if os.path.exists(out):
        os.remove(out)
    cmd = [opprobe, "analyze", inp, "--backend", backend, "--verbosity", "0", "--no-progress", "-q", "-o", out,
           "--probe-timeout", "300"]
    cmd += ["--cache", cache] if cache else ["--no-cache"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if not os.path.exists(out):
        sys.exit("agreement: {} failed (exit {}): {}".format(" ".join(cmd), r.returncode, r.stderr.strip()[-500:]))
    with open(out) as f:
        return json.load(f)


def element_type(signature):
    m = re.match(r"\(?([a-z][a-z0-9]*)\[", signature)
    return m.group(1) if m else "?"


def is_hlo(path):
    return not path.endswith(".json")


def unit_class(signature):
    """A unit's signature with its numbers left out (element types kept): units of one class differ only in shapes and
    attributes' values."""
    parts = re.split(r"\b((?:pred|bf16|[suf]\d+(?:e\d+m\d+\w*)?|c\d+)(?=\[))", signature)
    return "".join(p if i % 2 else re.sub(r"\d+", "N", p) for i, p in enumerate(parts))


def elements(signature):
    """How many elements a unit's shapes hold together (its result and operands, as its signature writes them)."""
    total = 0
    for dims in re.findall(r"\[([0-9,<=]*)\]", signature):
        n = 1
        for d in dims.replace("<=", "").split(","):
            n *= int(d) if d else 1
        total += n
    return total


def gather(opprobe, inputs, sampled_sources, per_class):
    """{fingerprint: unit} of every input (a unit holds its module, opcode, type, signature, sources, inputs and
    verdicts{backend: verdict}), and marks which units are probed: every unit, except that of the units only the
    sampled sources have, `per_class` units per class (the fewest elements, then the smallest fingerprints) stand for
    the class."""
    units = {}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        for source, label, inp in inputs:
            for u in analyze(opprobe, inp, "rules:cpu", None, report).get("instructions", []):
                e = units.setdefault(u["fingerprint"], {
                    "opcode": u["opcode"], "type": element_type(u["signature"]), "signature": u["signature"],
                    "module": u["hlo_module"], "sources": set(), "inputs": set(), "aten_ops": set(),
                    "verdicts": {}})
                e["sources"].add(source)
                e["inputs"].add(label)
                e["aten_ops"].update(u.get("aten_ops", []) if not is_hlo(inp) else [])
    taken = collections.Counter()
    for fp in sorted(units, key=lambda fp: (elements(units[fp]["signature"]), fp)):
        u = units[fp]
        u["probed"] = not u["sources"] <= set(sampled_sources)
        if not u["probed"] and taken[unit_class(u["signature"])] < per_class:
            taken[unit_class(u["signature"])] += 1
            u["probed"] = True
    return units


def probe(opprobe, units, cache, work):
    """Every probed unit through every backend (one run per backend over a folder holding one file per unit), and
    through the profile `opprobe profile record --backend xla:cpu` writes from the same units."""
    folder = os.path.join(work, "units")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for fp, u in units.items():
        if u["probed"]:
            with open(os.path.join(folder, fp + ".hlo"), "w") as f:
                f.write(u["module"])
    profile = os.path.join(work, PROFILE + ".json")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        for backend in BACKENDS + [PROFILE]:
            t0 = time.time()
            if backend == PROFILE:
                cmd = [opprobe, "profile", "record", "--backend", "xla:cpu", "-o", profile, "--name", PROFILE, folder]
                r = subprocess.run(cmd + (["--cache", cache] if cache else ["--no-cache"]), cwd=ROOT,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("agreement: {} failed (exit {}): {}".format(" ".join(cmd), r.returncode, r.stderr[-500:]))
            spec = "rules:" + profile if backend == PROFILE else backend
            for u in analyze(opprobe, folder, spec, None if backend == PROFILE else cache, report)["instructions"]:
                if u["fingerprint"] in units:
                    units[u["fingerprint"]]["verdicts"][backend] = {
                        "kind": u["verdict"], "reason": u.get("reason", ""), "tail": u.get("output_tail", "")}
            log("{}: {} units in {:.0f} s".format(spec if backend != PROFILE else "recorded profile",
                                                  sum(1 for u in units.values() if u["probed"]), time.time() - t0))
            if backend in EXECUTING:
                recheck_crashes(opprobe, units, backend, folder, report)
    return units


def recheck_crashes(opprobe, units, backend, folder, report):
    """A unit a compiler crashed on (an `error` verdict) is probed again alone, by a fresh opprobe and worker: IREE
    crashed on units of a long run that run alone, so a crash in the run is the unit's answer only if it crashes alone
    too. Where the alone verdict differs, it is the unit's verdict and the run's crash is kept as `in_run`."""
    t0, n = time.time(), 0
    for fp, u in sorted(units.items()):
        v = u["verdicts"].get(backend)
        if not u["probed"] or not v or v["kind"] != "error":
            continue
        n += 1
        alone = analyze(opprobe, os.path.join(folder, fp + ".hlo"), backend, None, report)["instructions"]
        a = next(({"kind": x["verdict"], "reason": x.get("reason", ""), "tail": x.get("output_tail", "")}
                  for x in alone if x["fingerprint"] == fp), None)
        if a and a["kind"] != "error":
            u["verdicts"][backend] = dict(a, in_run=v)
    if n:
        log("{}: {} crashed units probed again alone in {:.0f} s".format(backend, n, time.time() - t0))


def collect(opprobe, inputs, cache, work, sampled_sources=(), per_class=0):
    units = probe(opprobe, gather(opprobe, inputs, sampled_sources, per_class), cache, work)
    with open(os.path.join(work, "units.json"), "w") as f:  # every verdict, for a closer look
        json.dump({fp: dict(u, sources=sorted(u["sources"]), inputs=sorted(u["inputs"]),
                            aten_ops=sorted(u["aten_ops"]), module=None)
                   for fp, u in units.items() if u["probed"]}, f, indent=1)
    return units


def chip_profiles(target):
    """The rules profiles that stand for a chip target where its compiler cannot be installed, as the source tree holds
    them: its family's (`tpu`) and, where its generation has one of its own (compiler_probe/rules/profiles/tpu-v4.json),
    that one too, last."""
    family, gen = target.split(":")[:2]
    names = [family]
    if os.path.exists(os.path.join(PROFILES, "{}-{}.json".format(family, gen))):
        names.append("{}-{}".format(family, gen))
    return names


def chip_backends():
    """The chip targets, then every rules profile that stands for one (`rules:NAME`)."""
    return CHIP_TARGETS + ["rules:" + n for n in sorted({n for t in CHIP_TARGETS for n in chip_profiles(t)})]


def probe_chips(opprobe, units, cache, work):
    """Every probed unit through every chip target's compiler and every profile that stands for one (the profile files
    of the source tree, which the build embeds as rules:NAME), and the hand-written evidence units (CHIP_EVIDENCE) too,
    added to `units` marked `evidence`; returns {backend: version}."""
    folder = os.path.join(work, "chip-units")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for fp, u in units.items():
        if u["probed"]:
            with open(os.path.join(folder, fp + ".hlo"), "w") as f:
                f.write(u["module"])
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        for backend in chip_backends():
            t0 = time.time()
            rules = backend.startswith("rules:")
            spec = "rules:" + os.path.join(PROFILES, backend[len("rules:"):] + ".json") if rules else backend
            r = analyze(opprobe, folder, spec, None if rules else cache, report)
            versions[backend] = r.get("backend_version", "")
            for u in r["instructions"]:
                if u["fingerprint"] in units:
                    units[u["fingerprint"]]["verdicts"][backend] = {
                        "kind": u["verdict"], "reason": u.get("reason", ""), "tail": u.get("output_tail", "")}
            log("{}: {} units in {:.0f} s".format(backend, sum(1 for u in units.values() if u["probed"]),
                                                  time.time() - t0))
            if not rules:
                recheck_crashes(opprobe, units, backend, folder, report)
            for u in analyze(opprobe, CHIP_EVIDENCE, spec, None if rules else cache, report)["instructions"]:
                e = units.setdefault("evidence:" + u["fingerprint"], {
                    "opcode": u["opcode"], "type": element_type(u["signature"]), "signature": u["signature"],
                    "sources": {"evidence"}, "inputs": set(), "aten_ops": set(), "verdicts": {}, "probed": True,
                    "evidence": True})
                e["verdicts"][backend] = {"kind": u["verdict"], "reason": u.get("reason", ""), "tail": ""}
    return versions


def chip_complete(u):
    return u["probed"] and not u.get("evidence") and all(b in u["verdicts"] for b in chip_backends())


def chip_evidence(units):
    return sorted((u for u in units.values() if u.get("evidence")), key=lambda u: (u["opcode"], u["signature"]))


def fig_key(name):
    """`tpu:v5e` -> `tpu_v5e`, `rules:tpu-v4` -> `rules_tpu_v4`: a figure's name part."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def chip_reference(target):
    """The target of the same family its other targets are compared with (the family's first: tpu:v5e, gpu:h100)."""
    return next(t for t in CHIP_TARGETS if t.split(":")[0] == target.split(":")[0])


def chip_figures(units):
    f = collections.Counter()
    for u in units.values():
        if not chip_complete(u):
            continue
        v = u["verdicts"]
        f["chip_units"] += 1
        for t in CHIP_TARGETS:
            f[fig_key(t) + "_compiles"] += runs(v[t])
            f[fig_key(t) + "_errors"] += v[t]["kind"] == "error"
            if v[t]["kind"] == "error":  # the compiler crashed or failed inside: no verdict to agree with
                continue
            f[fig_key(t) + "_answered"] += 1
            for n in chip_profiles(t):
                f["{}_{}_agree".format(fig_key("rules:" + n), fig_key(t))] += runs(v["rules:" + n]) == runs(v[t])
            ref = chip_reference(t)
            if ref != t and v[ref]["kind"] != "error":
                f["{}_{}_same".format(fig_key(t), fig_key(ref))] += runs(v[t]) == runs(v[ref])
    for u in chip_evidence(units):
        v = u["verdicts"]
        f["evidence_units"] += 1
        for t in CHIP_TARGETS:
            for n in chip_profiles(t):
                if t in v and "rules:" + n in v and v[t]["kind"] != "error":
                    f["{}_{}_evidence_agree".format(fig_key("rules:" + n), fig_key(t))] += runs(
                        v["rules:" + n]) == runs(v[t])
    return dict(sorted(f.items()))


def chip_regressions(quick, want):
    """What got worse in the chips' quick figures against the recorded ones: a profile's agreement with its target or a
    target's compiled units dropped, its errors rose, or the units changed. (Whether two generations agree is a fact
    about the compilers, not a regression.)"""
    bad = []
    for k in sorted(set(quick) | set(want)):
        q, w = quick.get(k, 0), want.get(k, 0)
        if (k.endswith("_agree") or k.endswith("_compiles")) and q < w or k.endswith("_errors") and q > w:
            bad.append("{}: {} (recorded {})".format(k, q, w))
    if quick.get("chip_units", 0) != want.get("chip_units", 0):
        bad.append("chip_units: {} (recorded {}): regenerate docs/agreement.md with scripts/agreement --part chips"
                   .format(quick.get("chip_units", 0), want.get("chip_units", 0)))
    return bad


def recorded_chip_figures(path):
    with open(path) as f:
        text = f.read()
    if CHIP_FIGURES_BEGIN not in text:
        return {}
    start = text.index(CHIP_FIGURES_BEGIN) + len(CHIP_FIGURES_BEGIN)
    return json.loads(text[start:text.index(FIGURES_END, start)])


def compiler_version(version):
    """`libtpu 0.0.42.1` of a chip backend's version line (the package; the rest names the build and topology)."""
    return version.split(";")[0].strip()


def compiler_cell(version):
    """A chip backend's version line shortened for a table: the package, the build (`cl/...`) and the topology."""
    parts = [p.strip() for p in version.split(";")]
    build = [m for p in parts for m in re.findall(r"cl/\d+", p)]
    topo = [p[len("topology "):] for p in parts if p.startswith("topology ")]
    device = [p[len("cuda "):] for p in parts if p.startswith("cuda ")]
    return ", ".join(parts[:1] + ["build " + b for b in build[:1]] + device[:1] + ["topology " + t for t in topo[:1]])


def plural(n, word):
    return "{} {}{}".format(n, word, "" if n == 1 else "s")


def chip_section(units, versions, quick_figures, seconds, command):
    """docs/agreement.md's section on the real TPU and GPU compilers, between CHIPS_BEGIN and CHIPS_END."""
    done = {k: u for k, u in units.items() if chip_complete(u)}
    f = chip_figures(units)
    n = f.get("chip_units", 0)
    profiles = sorted((b for b in chip_backends() if b.startswith("rules:")),
                      key=lambda b: ([t.split(":")[0] for t in CHIP_TARGETS].index(b[6:].split("-")[0]), b))
    own = ["`{}`".format(p) for p in profiles if "-" in p]
    tpus = [t[4:] for t in CHIP_TARGETS if t.startswith("tpu:")]
    gpus = [t[4:] for t in CHIP_TARGETS if t.startswith("gpu:")]
    L = [CHIPS_BEGIN, "## Real TPU and GPU compilers", "",
         "Generated with the rest by `scripts/agreement`, or alone by `scripts/agreement --part chips`, which rewrites",
         "only this section. `scripts/agreement --check --part chips` (the ctest entry `agreement_chips_quick`, label",
         "`agreement`) recomputes the quick subset and fails when a profile's agreement with its target or a target's",
         "compiled units drop, or its errors rise.",
         "The units are the ones above (the same inputs; of the model sweeps the same {} per class), each compiled by "
         "the"
         .format(PER_CLASS),
         "chip's own compiler with no chip present: XLA's TPU compiler ({}) for TPU {} (`tpu:GEN`, the generation's"
         .format(compiler_version(versions.get(CHIP_TARGETS[0], "")), ", ".join(tpus)),
         "default slice) and XLA's GPU compiler ({}) for {} (`gpu:DEVICE`, a target config of".format(
             compiler_version(versions.get("gpu:" + gpus[0], "")), ", ".join(x.upper() for x in gpus)),
         "compiler_probe/chip/gpu_targets). A unit *compiles* when the compiler accepts it and is *refused* when it",
         "answers with an error status and message (nothing runs); an *error* is the compiler crashing or failing "
         "inside",
         "(an INTERNAL status, a failed check): the backend's `error` verdict, which says nothing about the op on the",
         "chip, so agreement counts only the units the compiler answered, and the errors are listed apart. Each "
         "target is",
         "compared with the rules profiles that stand for it on a machine without its compiler, as the source tree "
         "holds",
         "them (`compiler_probe/rules/profiles/NAME.json`, built in as `rules:NAME`): its family's (`rules:tpu`,",
         "`rules:gpu`) and, where a generation's verdicts differ from the family's, the generation's own",
         "(`rules:tpu-GEN`; {}). The profiles are recorded from these verdicts (docs/profiles.md).".format(
             "here " + ", ".join(own) if own else "none: the generations agree on every unit"),
         "",
         "This run: `{}`, {} units in {}. With `--cache`, a unit an earlier run compiled with the same compiler".format(
             command, n, _duration(seconds)),
         "version is not compiled again; without it every unit is (about 0.12 s of CPU a unit for a TPU target, 0.15 s",
         "for a GPU target).", "",
         "| target | compiler | units | compile | refused | errors | " + " | ".join(
             "`{}` agrees (of the answered)".format(p) for p in profiles) + " |",
         "| --- " * (6 + len(profiles)) + "|"]
    for t in CHIP_TARGETS:
        cells = []
        for p in profiles:
            k = "{}_{}_agree".format(fig_key(p), fig_key(t))
            cells.append("{}/{}".format(f[k], f.get(fig_key(t) + "_answered", 0)) if k in f else "–")
        L.append("| `{}` | {} | {} | {} | {} | {} | {} |".format(
            t, md(compiler_cell(versions.get(t, ""))), n, f.get(fig_key(t) + "_compiles", 0),
            n - f.get(fig_key(t) + "_compiles", 0) - f.get(fig_key(t) + "_errors", 0), f.get(fig_key(t) + "_errors", 0),
            " | ".join(cells)))

    L += ["", "### Per source", "",
          "Units each target compiles, per source (a unit counts for every source that has it).",
          "", "| source | units | " + " | ".join("`{}`".format(t) for t in CHIP_TARGETS) + " |",
          "| --- " * (2 + len(CHIP_TARGETS)) + "|"]
    for s in SOURCES:
        sub = [u for u in done.values() if s in u["sources"]]
        if sub:
            L.append("| {} | {} | {} |".format(s, len(sub), " | ".join(
                str(sum(runs(u["verdicts"][t]) for u in sub)) for t in CHIP_TARGETS)))

    rows = collections.defaultdict(collections.Counter)
    for u in done.values():
        if not all(runs(u["verdicts"][t]) for t in CHIP_TARGETS):
            r = rows[(u["opcode"], u["type"])]
            r["n"] += 1
            for t in CHIP_TARGETS:
                r[t] += runs(u["verdicts"][t])
    L += ["", "### Opcodes and element types some target refuses", "",
          "Units per opcode and element type of the units at least one target refuses, and how many of them each "
          "target",
          "compiles.", "", "| opcode | type | units | " + " | ".join("`{}`".format(t) for t in CHIP_TARGETS) + " |",
          "| --- " * (3 + len(CHIP_TARGETS)) + "|"]
    for (op, t), r in sorted(rows.items()):
        L.append("| `{}` | {} | {} | {} |".format(op, t, r["n"], " | ".join(str(r[x]) for x in CHIP_TARGETS)))
    if not rows:
        L.append("| – | – | 0 |" + " |" * len(CHIP_TARGETS))

    def listing(items, a, b):
        """Units on which a and b disagree, grouped by opcode, element type and the refusal's message without its
        shapes; the example is the first such unit."""
        out = []
        groups = grouped(items, lambda u: (u["opcode"], u["type"], runs(u["verdicts"][a]), shapeless(
            u["verdicts"][b if runs(u["verdicts"][a]) else a]["reason"])))
        for (op, t, a_runs, _), us in groups.items():
            u = us[0]
            loser = b if a_runs else a
            out.append("- `{}` {} ({} unit{}; {} compiles, {} does not): e.g. `{}` from {}: {} says {}.".format(
                op, t, len(us), "" if len(us) == 1 else "s", a if a_runs else b, loser, md(u["signature"][:150]),
                md(", ".join(sorted(u["inputs"]))[:120]), loser, md(verdict_text(u["verdicts"][loser], 260))))
        return out

    ordered = sorted(done.values(), key=lambda u: (u["opcode"], u["type"], u["signature"]))
    errs = lambda u, *ts: any(u["verdicts"][t]["kind"] == "error" for t in ts)  # noqa: E731
    L += ["", "### Where the generations differ", "",
          "Units both compilers answered on which a target's compiler answers otherwise than its family's first",
          "target's ({}).".format(
              ", ".join("`{}`".format(chip_reference(t)) for t in CHIP_TARGETS if chip_reference(t) == t))]
    for t in CHIP_TARGETS:
        ref = chip_reference(t)
        if ref == t:
            continue
        items = [u for u in ordered if runs(u["verdicts"][t]) != runs(u["verdicts"][ref]) and not errs(u, t, ref)]
        L += ["", "#### {} vs {} ({})".format(t, ref, plural(len(items), "unit")), ""]
        L += listing(items, t, ref) if items else ["None."]

    L += ["", "### Disagreements of the profiles with the compilers", "",
          "Each unit the compiler answered on which a profile and the target it stands for disagree, with the",
          "compiler's own message."]
    for t in CHIP_TARGETS:
        for p in chip_profiles(t):
            items = [u for u in ordered if runs(u["verdicts"]["rules:" + p]) != runs(u["verdicts"][t])
                     and not errs(u, t)]
            L += ["", "#### rules:{} vs {} ({})".format(p, t, plural(len(items), "unit")), ""]
            L += listing(items, "rules:" + p, t) if items else ["None."]

    L += ["", "### Hand-written units", "",
          "The units of tests/agreement/chip_units, for the profiles' rules that no unit above exercises: each "
          "target's",
          "verdict and, after the slash, its profile's (`rules:{}`, `rules:{}`); counted in no figure above.".format(
              *[chip_profiles(t)[0] for t in (CHIP_TARGETS[0], CHIP_TARGETS[-1])]), "",
          "| unit | " + " | ".join("`{}`".format(t) for t in CHIP_TARGETS) + " |",
          "| --- " * (1 + len(CHIP_TARGETS)) + "|"]
    for u in chip_evidence(units):
        v = u["verdicts"]
        cells = []
        for t in CHIP_TARGETS:
            p = "rules:" + chip_profiles(t)[-1]
            if t not in v or p not in v:
                cells.append("–")
                continue
            cell = "{} / {}".format(v[t]["kind"], v[p]["kind"])
            if runs(v[t]) != runs(v[p]):
                cell = "**{}**".format(cell)
            if not runs(v[t]):
                cell += ": " + md(re.sub(r"^compile: ", "", v[t]["reason"])[:110])
            cells.append(cell)
        L.append("| `{}` | {} |".format(md(u["signature"][:110]), " | ".join(cells)))

    L += ["", "### What each compiler refuses, and where it fails", "",
          "Every refusal and every error (marked), grouped by opcode, element type and the compiler's message without",
          "its shapes and numbers; for an error, what the target's profile says."]
    for t in CHIP_TARGETS:
        items = [u for u in ordered if not runs(u["verdicts"][t])]
        L += ["", "#### {} ({})".format(t, plural(len(items), "unit")), ""]
        if not items:
            L.append("None.")
        prof = "rules:" + chip_profiles(t)[-1]
        def key(u, t=t):
            return (u["opcode"], u["type"], u["verdicts"][t]["kind"],
                    shapeless(re.sub(r"^.*?\] ", "", u["verdicts"][t]["reason"])))
        for (op, ty, _, _), us in grouped(items, key).items():
            u = us[0]
            said = collections.Counter(u["verdicts"][prof]["kind"] for u in us)
            L.append("- {}`{}` {} ({}): e.g. `{}` from {}: {}.{}".format(
                "**error** " if errs(u, t) else "", op, ty, plural(len(us), "unit"), md(u["signature"][:150]),
                md(", ".join(sorted(u["inputs"]))[:120]), md(verdict_text(u["verdicts"][t], 300)),
                " {} says {}.".format(prof, ", ".join("{} {}".format(k, c) for k, c in sorted(said.items())))
                if errs(u, t) else ""))
    L += ["", CHIP_FIGURES_BEGIN, json.dumps(quick_figures, sort_keys=True), FIGURES_END, CHIPS_END]
    return L


def splice_section(path, section, begin, end):
    """Writes a section between the markers `begin` and `end` into the doc at `path` in place of the one there (or,
    when there is none yet, before "## Explained differences"), leaving every other byte as it was."""
    with open(path) as f:
        text = f.read()
    block = "\n".join(section) + "\n"
    if begin in text:
        start = text.index(begin)
        stop = text.index(end, start) + len(end) + 1
        text = text[:start] + block + text[stop:]
    else:
        at = text.find("\n## Explained differences\n")
        at = at + 1 if at >= 0 else text.index(FIGURES_BEGIN)
        text = text[:at] + block + "\n" + text[at:]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def torchax_rows(a, work, quick):
    """opprobe's lowering of the OpInfo sweep's calls (torch 2.9) against torchax's
    (tests/agreement/torchax_compare.py)."""
    os.makedirs(work, exist_ok=True)
    samples = os.path.join(work, "torchax-samples.json")
    if not (a.reuse and not quick and os.path.exists(samples)):
        tax.record(a.torchax_python, samples, QUICK_OPINFO if quick else [], log)
    return tax.compare(a.opprobe, a.torchax_python, samples, work, log)


def torchax_section(rows, version, quick_figures, seconds, command):
    L = [TORCHAX_BEGIN] + tax.doc_section(rows, version, md)
    L += ["", "Written by `{}` in {:.0f} s; `scripts/agreement --check --part torchax` "
          "(ctest `agreement_torchax_quick`) recomputes the quick subset ({} OpInfo entries) and fails when a figure "
          "regressed.".format(
              command, seconds, len(QUICK_OPINFO)), "", TORCHAX_FIGURES_BEGIN,
          json.dumps(quick_figures, sort_keys=True),
          FIGURES_END, TORCHAX_END]
    return L


def recorded_torchax_figures(path):
    with open(path) as f:
        text = f.read()
    if TORCHAX_FIGURES_BEGIN not in text:
        return {}
    start = text.index(TORCHAX_FIGURES_BEGIN) + len(TORCHAX_FIGURES_BEGIN)
    return json.loads(text[start:text.index(FIGURES_END, start)])


def torchax_regressions(quick, want):
    bad = ["{}: {} (recorded {})".format(k, quick.get(k, 0), want.get(k, 0))
           for k in tax.HIGHER_IS_BETTER if quick.get(k, 0) < want.get(k, 0)]
    bad += ["{}: {} (recorded {})".format(k, quick.get(k, 0), want.get(k, 0))
            for k in tax.LOWER_IS_BETTER if quick.get(k, 0) > want.get(k, 0)]
    if quick.get("tax_calls", 0) != want.get("tax_calls", 0):
        bad.append("tax_calls: {} (recorded {}): regenerate the section with scripts/agreement --part torchax".format(
            quick.get("tax_calls", 0), want.get("tax_calls", 0)))
    return bad


def splice_chips(path, section):
    """The chips section, spliced in as splice_section does."""
    splice_section(path, section, CHIPS_BEGIN, CHIPS_END)


def runs(v):
    """Whether a verdict says the unit compiles and runs (a numerics difference still ran)."""
    return v["kind"] == "supported" or v["reason"].startswith("numerics: ")


def numbers(v):
    """How an executing backend's results compare with interp's: match, differ, not compared, or None (did not run)."""
    if v["reason"].startswith("numerics: "):
        return "differ"
    if v["kind"] != "supported":
        return None
    if v["tail"].startswith("compared with interp: "):
        return "match"
    return "not compared"


def complete(u):
    return u["probed"] and all(b in u["verdicts"] for b in BACKENDS + [PROFILE])


def figures(units):
    f = collections.Counter()
    for u in units.values():
        if not complete(u):
            continue
        v = u["verdicts"]
        f["units"] += 1
        for b in BACKENDS:
            f["{}_runs".format(SHORT[b])] += runs(v[b])
            f["{}_errors".format(SHORT[b])] += v[b]["kind"] == "error"
        for a, b in PAIRS:
            f["{}_{}_agree".format(SHORT[a], SHORT[b])] += runs(v[a]) == runs(v[b])
        f["recorded_profile_xla_agree"] += runs(v[PROFILE]) == runs(v["xla:cpu"])
        for b in EXECUTING:
            n = numbers(v[b])
            if n:
                f["{}_numbers_{}".format(SHORT[b], n.replace(" ", "_"))] += 1
    return dict(sorted(f.items()))


HIGHER_IS_BETTER = ["{}_{}_agree".format(SHORT[a], SHORT[b]) for a, b in PAIRS] + [
    "recorded_profile_xla_agree", "xla_numbers_match", "iree_numbers_match", "xla_runs", "iree_runs"]
LOWER_IS_BETTER = ["xla_numbers_differ", "iree_numbers_differ", "xla_errors", "iree_errors"]


def md(text):
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_text(v, n=200):
    return v["kind"] + (": " + v["reason"][:n] if v["reason"] else "")


def disagreements(units, a, b):
    """Units on which backends a and b disagree, as (unit, explanation or None)."""
    out = []
    for u in sorted(units.values(), key=lambda u: (u["opcode"], u["type"], u["signature"])):
        if complete(u) and runs(u["verdicts"][a]) != runs(u["verdicts"][b]):
            out.append((u, explanations.explain(a, b, u)))
    return out


def grouped(items, key):
    groups = collections.OrderedDict()
    for it in items:
        groups.setdefault(key(it), []).append(it)
    return groups


def shapeless(reason):
    """A reason with its shapes, numbers and value names left out, so that units failing alike group together."""
    r = re.sub(r"tensor<[^>]*>", "tensor<...>", reason)
    r = re.sub(r"[a-z0-9]+\[[0-9,]*\](\{[0-9,]*\})?", "T", r)
    r = re.sub(r"%[A-Za-z0-9_.#]+", "%v", r)
    r = re.sub(r"-?\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", r)
    return r[:220]


def write_doc(units, inputs, txla_rows, quick_figures, chips, path, seconds, command):
    full = dict(figures(units), **txla.figures(txla_rows))
    L = [
        "# Agreement of opprobe's verdict sources with real compilers",
        "",
        "Generated by `scripts/agreement` (do not edit by hand). `scripts/agreement --check` (the ctest entries",
        "`agreement_quick` and `agreement_torch_xla_quick`, label `agreement`) recomputes the quick subset below and",
        "fails when an agreement figure drops.",
        "Every unique probe unit of the inputs below goes through four verdict sources: `interp` (opprobe's "
        "evaluator),",
        "`rules:cpu` (the built-in CPU profile), `xla:cpu` (XLA's own CPU compiler and runtime from jaxlib 0.10.2,",
        "requirements/xla.txt) and `iree:llvm-cpu` (IREE 3.13.0's `iree-compile` for llvm-cpu and its runtime,",
        "requirements/iree.txt; a second compiler independent of XLA, fed the same StableHLO). A unit *runs* on a "
        "backend",
        "when its verdict is supported (for the compilers also when it ran but its numbers differ from interp's).",
        "*Numbers* compares a compiler's results with interp's on the same deterministic inputs (tolerances in",
        "compiler_probe/worker/compare.h). `recorded` is the rules profile `opprobe profile record --backend "
        "xla:cpu`",
        "writes from xla:cpu's verdicts on all these units, applied to the same units: it must give xla:cpu's answer.",
        "",
        "This run: `{}`, {} units in {} on this project's CI machine (2 busy cores). With `--cache`, a unit an earlier"
        .format(command, full.get("units", 0), _duration(seconds)),
        "run probed with the same backend versions is not probed again, so a run's time says only what it had left to",
        "probe; without it every unit is probed (IREE takes about half a second of CPU per unit: well over an hour for",
        "all of them here).",
        "",
        "## Inputs",
        "",
        "A unit belongs to every source that has it. Of the units only the model sweeps have (tens of thousands that",
        "differ mostly in shapes; IREE takes about half a second of CPU per unit), {} per class stand for the "
        "class".format(
            PER_CLASS),
        "(a class: the unit's signature with its numbers left out, e.g. `f32[N,N]{N,N} add(f32[N,N]{N,N}, ...)`; the",
        "units with the fewest elements, so interp's reference evaluation stays cheap); every other unit is probed.",
        "",
        "| source | inputs | units | probed |",
        "| --- | --- | --- | --- |",
    ]
    for s in SOURCES:
        labels = [label for src, label, _ in inputs if src == s]
        if not labels:
            continue
        n = sum(1 for u in units.values() if s in u["sources"])
        probed = sum(1 for u in units.values() if complete(u) and s in u["sources"])
        shown = ", ".join("`{}`".format(x) for x in labels)
        L.append("| {} | {} | {} | {} |".format(SOURCE_TITLES[s], shown, n, probed))
    left = [s for s in SOURCES if not any(src == s for src, _, _ in inputs)]
    if left:
        L += ["", "**Not in this run** (`--sources` left them out; every figure below is over the sources above "
              "only): " +
              ", ".join(SOURCE_TITLES[s] for s in left) + "."]
    L += ["", "Left out for time: " + ", ".join("`{}`".format(f) for f in sorted(TOO_SLOW)) + ".", "",
          "## Totals", "", "| figure | all inputs | quick subset |", "| --- | --- | --- |"]
    for k in sorted(set(full) | set(quick_figures)):
        L.append("| {} | {} | {} |".format(k, full.get(k, 0), quick_figures.get(k, 0)))

    # Per source.
    L += ["", "## Per source", "", "| source | units | " + " | ".join(
        "{} = {}".format(SHORT[a], SHORT[b]) for a, b in PAIRS) + " | recorded = xla | xla numbers match / differ | "
        "iree numbers match / differ |", "| --- " * (len(PAIRS) + 6) + "|"]
    for s in SOURCES:
        sub = {k: u for k, u in units.items() if s in u["sources"]}
        if not sub:
            continue
        f = figures(sub)
        n = f.get("units", 0)
        L.append("| {} | {} | {} | {}/{} | {} / {} | {} / {} |".format(
            s, n, " | ".join("{}/{}".format(f.get("{}_{}_agree".format(SHORT[a], SHORT[b]), 0), n) for a, b in PAIRS),
            f.get("recorded_profile_xla_agree", 0), n, f.get("xla_numbers_match", 0), f.get("xla_numbers_differ", 0),
            f.get("iree_numbers_match", 0), f.get("iree_numbers_differ", 0)))

    # Per opcode and element type.
    rows = collections.defaultdict(collections.Counter)
    for u in units.values():
        if not complete(u):
            continue
        v = u["verdicts"]
        r = rows[(u["opcode"], u["type"])]
        r["n"] += 1
        for b in EXECUTING:
            r[b + " runs"] += runs(v[b])
            r[b + " " + str(numbers(v[b]))] += 1
        for a, b in PAIRS:
            r[a + "=" + b] += runs(v[a]) == runs(v[b])
    L += ["", "## Per opcode and element type", "",
          "Agreement columns count units on which both say the same (runs or not); numbers: match / differ / not "
          "compared.", "",
          "| opcode | type | units | xla runs | iree runs | " + " | ".join(
              "{} = {}".format(SHORT[a], SHORT[b]) for a, b in PAIRS) + " | xla numbers | iree numbers |",
          "| --- " * (len(PAIRS) + 7) + "|"]
    for (op, t), r in sorted(rows.items()):
        L.append("| `{}` | {} | {} | {} | {} | {} | {} | {} |".format(
            op, t, r["n"], r["xla:cpu runs"], r["iree:llvm-cpu runs"],
            " | ".join(str(r[a + "=" + b]) for a, b in PAIRS),
            "{} / {} / {}".format(r["xla:cpu match"], r["xla:cpu differ"], r["xla:cpu not compared"]),
            "{} / {} / {}".format(r["iree:llvm-cpu match"], r["iree:llvm-cpu differ"],
                                  r["iree:llvm-cpu not compared"])))

    # Disagreements.
    L += ["", "## Disagreements", "",
          "Each unit on which a pair disagrees, with xla:cpu's (or IREE's) own message and, where known, why",
          "(tests/agreement/explanations.py). Units failing alike are grouped: opcode, element type and the message "
          "with",
          "its shapes left out; the example is the first such unit."]
    for a, b in [("rules:cpu", "xla:cpu"), (PROFILE, "xla:cpu"), ("interp", "xla:cpu"), ("iree:llvm-cpu", "xla:cpu"),
                 ("interp", "iree:llvm-cpu")]:
        items = [] if a == PROFILE else disagreements(units, a, b)
        if a == PROFILE:
            items = [(u, None) for u in sorted(units.values(), key=lambda u: u["signature"])
                     if complete(u) and runs(u["verdicts"][PROFILE]) != runs(u["verdicts"]["xla:cpu"])]
        L += ["", "### {} vs {} ({} units)".format(a, b, len(items)), ""]
        if not items:
            L.append("None.")
            continue
        groups = grouped(items, lambda it, a=a, b=b: (it[0]["opcode"], it[0]["type"], runs(it[0]["verdicts"][a]),
                                            shapeless(it[0]["verdicts"][b if not runs(it[0]["verdicts"][b]) else a]
                                                      ["reason"])))
        for (op, t, a_runs, _), its in groups.items():
            u, why = its[0]
            loser = b if a_runs else a
            L.append("- `{}` {} ({} unit{}; {} runs, {} does not): e.g. `{}` from {}: {} says {}.{}".format(
                op, t, len(its), "" if len(its) == 1 else "s", a if a_runs else b, loser,
                md(u["signature"][:150]), md(", ".join(sorted(u["inputs"]))[:120]), loser,
                md(verdict_text(u["verdicts"][loser], 260)), " **Why:** " + why if why else " **Why:** not known yet."))

    L += ["", "## Numbers that differ from interp", ""]
    for b in EXECUTING:
        items = [u for u in sorted(units.values(), key=lambda u: (u["opcode"], u["type"], u["signature"]))
                 if complete(u) and numbers(u["verdicts"][b]) == "differ"]
        L += ["### {} ({} units)".format(b, len(items)), ""]
        if not items:
            L += ["None.", ""]
            continue
        for (op, t), its in grouped(items, lambda u: (u["opcode"], u["type"])).items():
            why = explanations.explain_numbers(b, its[0])
            L.append("- `{}` {} ({} unit{}): e.g. `{}` from {}: {}.{}".format(
                op, t, len(its), "" if len(its) == 1 else "s", md(its[0]["signature"][:150]),
                md(", ".join(sorted(its[0]["inputs"]))[:120]), md(its[0]["verdicts"][b]["reason"][:300]),
                " **Why:** " + why if why else " **Why:** not known yet."))
        L.append("")

    L += ["## Crashes in the run that a unit alone does not reproduce", "",
          "A compiler crash (an `error` verdict) is probed again with the unit alone, by a fresh opprobe and worker;",
          "where the unit then runs (or is refused with a message), that is its verdict above, and the run's crash is",
          "listed here. Runs denser in crashing scatters than this one (IREE writes out-of-range scatter updates",
          "outside its buffer) saw IREE crash on units that run alone; the recheck keeps such a crash from standing",
          "as the unit's answer.", ""]
    for b in EXECUTING:
        items = [u for u in sorted(units.values(), key=lambda u: (u["opcode"], u["type"], u["signature"]))
                 if complete(u) and "in_run" in u["verdicts"][b]]
        L.append("- {}: {}".format(b, "none." if not items else "{} unit{}:".format(
            len(items), "" if len(items) == 1 else "s")))
        for u in items:
            v = u["verdicts"][b]
            L.append("  - `{}` from {}: in the run {}; alone {}.".format(
                md(u["signature"][:150]), md(", ".join(sorted(u["inputs"]))[:80]), md(verdict_text(v["in_run"], 120)),
                md(verdict_text(v, 120))))
    L.append("")
    L += txla.doc_section(txla_rows, explanations.explain_torch_xla, md) + [""]
    L += gap_list(units, txla_rows) + [""]
    L += chips + [""]
    L += ["## Explained differences", ""] + explanations.GENERAL + [""]
    L += [FIGURES_BEGIN, json.dumps(quick_figures, sort_keys=True), FIGURES_END, ""]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(L))
    os.replace(tmp, path)


def gap_list(units, txla_rows):
    """The lowerings that emit HLO XLA refuses or computes differently, and those whose HLO changes a verdict against
    torch_xla's: for the lowering owners (analyzer/lowering)."""
    L = ["## Lowering gaps", "",
         "Lowerings whose HLO xla:cpu refuses, per aten op, with the unit and XLA's message (units that only opprobe's",
         "HloModuleProto writer keeps from XLA, `LiteralProto has no layout`, are a writer gap, listed above, not a",
         "lowering's), then the aten ops whose lowering differs from torch_xla's in a way that changes a verdict.", ""]
    per_op = collections.OrderedDict()
    for u in sorted(units.values(), key=lambda u: u["signature"]):
        v = u["verdicts"]
        if not complete(u) or not u["aten_ops"] or runs(v["xla:cpu"]) or "LiteralProto has no layout" in v[
                "xla:cpu"]["reason"]:
            continue
        for op in sorted(u["aten_ops"]):
            per_op.setdefault(op, []).append(u)
    if not per_op:
        L.append("- xla:cpu: none.")
    for op, us in sorted(per_op.items()):
        u = us[0]
        L.append("- `{}` ({} unit{}): e.g. `{}`: xla:cpu says {}.{}".format(
            op, len(us), "" if len(us) == 1 else "s", md(u["signature"][:160]),
            md(verdict_text(u["verdicts"]["xla:cpu"], 200)),
            " " + (explanations.explain("interp", "xla:cpu", u) or "")))
    changing = collections.OrderedDict()
    for r in txla_rows:
        if r["verdicts"]:
            changing.setdefault(r["op"], []).append(r)
    if not changing:
        L.append("- torch_xla: no lowering's difference from torch_xla's HLO changes a verdict.")
    for op, rs in changing.items():
        L.append("- `{}` ({} call{}): against torch_xla's HLO, see \"Calls whose HLO differs and changes a verdict\""
                 " above.".format(op, len(rs), "" if len(rs) == 1 else "s"))
    return L


def regressions(quick, want, parts):
    """What got worse in the quick subset's figures against the recorded ones, for the parts computed."""
    mine = lambda k: ("torch_xla" if k.startswith("txla_") else "backends") in parts  # noqa: E731
    bad = ["{}: {} (recorded {})".format(k, quick.get(k, 0), want.get(k, 0))
           for k in HIGHER_IS_BETTER + txla.HIGHER_IS_BETTER if mine(k) and quick.get(k, 0) < want.get(k, 0)]
    bad += ["{}: {} (recorded {})".format(k, quick.get(k, 0), want.get(k, 0))
            for k in LOWER_IS_BETTER + txla.LOWER_IS_BETTER if mine(k) and quick.get(k, 0) > want.get(k, 0)]
    for k in [k for k in ("units", "txla_calls") if mine(k)]:
        if quick.get(k, 0) != want.get(k, 0):
            bad.append("{}: {} (recorded {}): regenerate docs/agreement.md with scripts/agreement".format(
                k, quick.get(k, 0), want.get(k, 0)))
    return bad


def recorded_figures(path):
    text = open(path).read()
    start = text.index(FIGURES_BEGIN) + len(FIGURES_BEGIN)
    return json.loads(text[start:text.index(FIGURES_END, start)])


def torch_xla_rows(a, work, quick):
    os.makedirs(work, exist_ok=True)
    samples = os.path.join(work, "torch_xla-samples.json")
    if not (a.reuse and not quick and os.path.exists(samples)):
        txla.record(a.torch_xla_python, samples, QUICK_OPINFO if quick else [], log)
    return txla.compare(a.opprobe, a.runner, samples, work)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--opprobe", default=os.path.join(ROOT, "build", "opprobe"))
    ap.add_argument("--runner", default=os.path.join(ROOT, "build", "tests", "conformance", "conformance_runner"),
                    help="the conformance suite's runner (evaluates lowerings on recorded inputs)")
    ap.add_argument("--torch-xla-python", default=os.environ.get("OPPROBE_TORCH_XLA_PYTHON") or os.path.join(
        os.environ.get("OPPROBE_VENV_ROOT", os.path.join(ROOT, ".venv")), "torch_xla", "bin", "python"),
                    help="a Python with torch_xla (requirements/torch_xla.txt)")
    ap.add_argument("--torchax-python", default=os.environ.get("OPPROBE_TORCHAX_PYTHON") or os.path.join(
        os.environ.get("OPPROBE_VENV_ROOT", os.path.join(ROOT, ".venv")), "torchax", "bin", "python"),
                    help="a Python with torchax (requirements/torchax.txt)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "agreement.md"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "agreement"),
                    help="folder for captures, the OpInfo traces and the recorded profiles")
    ap.add_argument("--cache", default="",
                    help="probe cache folder kept between runs (default: a fresh one per run, so every unit is probed)")
    ap.add_argument("--reuse", action="store_true", help="reuse captures and recordings already in --work")
    ap.add_argument("--sources", default=",".join(SOURCES), help="the sources of the full run (comma-separated)")
    ap.add_argument("--check", action="store_true",
                    help="recompute the quick subset and fail when an agreement figure is below the recorded one")
    ap.add_argument("--part", choices=["all", "backends", "torch_xla", "chips", "torchax"], default="all",
                    help="with --check: only the backends' figures, the torch_xla comparison's, the real chips' or "
                         "the torchax comparison's; without --check, `chips` (`torchax`) regenerates only the doc's "
                         "section on the real TPU and GPU compilers (on torchax's lowering), leaving the rest as it is")
    a = ap.parse_args()
    if not a.check and a.part in ("backends", "torch_xla"):
        ap.error("--part {} needs --check (the doc is regenerated whole, or only its chips section)".format(a.part))
    os.makedirs(a.work, exist_ok=True)
    parts = ["backends", "torch_xla", "chips"] if a.part == "all" else [a.part]
    command = " ".join(["scripts/agreement"] + sys.argv[1:])
    if a.part == "torchax":
        t0 = time.time()
        quick = tax.figures(torchax_rows(a, os.path.join(a.work, "quick"), True)[0])
        log("torchax quick subset: " + json.dumps(quick, sort_keys=True))
        if a.check:
            bad = torchax_regressions(quick, recorded_torchax_figures(a.out))
            if bad:
                sys.exit("agreement regressed: " + "; ".join(bad))
            log("no regression against " + os.path.relpath(a.out, ROOT))
            return
        rows, version = torchax_rows(a, a.work, False)
        splice_section(a.out, torchax_section(rows, version, quick, time.time() - t0, command), TORCHAX_BEGIN,
                       TORCHAX_END)
        log("wrote the torchax section of {} ({} calls)".format(a.out, len(rows)))
        return
    with tempfile.TemporaryDirectory() as fresh:
        cache = a.cache or fresh
        t0 = time.time()
        quick_work = os.path.join(a.work, "quick")
        quick, quick_chips = {}, {}
        if "backends" in parts or "chips" in parts:
            quick_inputs = inputs_for(a.opprobe, quick_work, True, False, SOURCES)
            quick_units = (collect(a.opprobe, quick_inputs, cache, quick_work) if "backends" in parts
                           else gather(a.opprobe, quick_inputs, (), 0))
            if "backends" in parts:
                quick.update(figures(quick_units))
            if "chips" in parts:
                probe_chips(a.opprobe, quick_units, cache, quick_work)
                quick_chips = chip_figures(quick_units)
        if "torch_xla" in parts:
            quick.update(txla.figures(torch_xla_rows(a, quick_work, True)))
        log("quick subset: {} ({:.0f} s)".format(json.dumps(dict(quick, **quick_chips), sort_keys=True),
                                                   time.time() - t0))
        if a.check:
            bad = regressions(quick, recorded_figures(a.out), [p for p in parts if p != "chips"])
            if "chips" in parts:
                want = recorded_chip_figures(a.out)
                if not want:
                    sys.exit("agreement: {} has no chips section: write it with scripts/agreement --part chips".format(
                        os.path.relpath(a.out, ROOT)))
                bad += chip_regressions(quick_chips, want)
            if bad:
                sys.exit("agreement regressed: " + "; ".join(bad))
            log("no regression against " + os.path.relpath(a.out, ROOT))
            return
        sources = [s for s in a.sources.split(",") if s]
        inputs = inputs_for(a.opprobe, a.work, False, a.reuse, sources)
        if a.part == "chips":
            t1 = time.time()
            units = gather(a.opprobe, inputs, SAMPLED, PER_CLASS)
            versions = probe_chips(a.opprobe, units, cache, a.work)
            splice_chips(a.out, chip_section(units, versions, quick_chips, time.time() - t1, command))
            log("wrote the chips section of {} ({} units)".format(a.out, chip_figures(units).get("chip_units", 0)))
            return
        units = collect(a.opprobe, inputs, cache, a.work, SAMPLED, PER_CLASS)
        t1 = time.time()
        versions = probe_chips(a.opprobe, units, cache, a.work)
        chips = chip_section(units, versions, quick_chips, time.time() - t1, command)
        rows = torch_xla_rows(a, a.work, False)
        # The explanations as they are now: a full run probes for over an hour, and they may be edited meanwhile.
        importlib.reload(explanations)
        write_doc(units, inputs, rows, quick, chips, a.out, time.time() - t0, command)
        t2 = time.time()
        tax_quick = tax.figures(torchax_rows(a, quick_work, True)[0])
        tax_rows, tax_version = torchax_rows(a, a.work, False)
        splice_section(a.out, torchax_section(tax_rows, tax_version, tax_quick, time.time() - t2, command),
                       TORCHAX_BEGIN, TORCHAX_END)
    log("wrote {} ({} units, {} calls against torch_xla, {} against torchax)".format(
        a.out, figures(units).get("units", 0), len(rows), len(tax_rows)))

if __name__ == "__main__":
    main()
