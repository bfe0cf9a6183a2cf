"""Unit tests of scripts/agreement.py's figures, its regression check, its chips section, its HLO reading for the
torch_xla comparison and the explanations' matching (ctest agreement_tools; no compiler needed)."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)

import agreement  # noqa: E402
import explanations  # noqa: E402
import torch_xla_compare as txla  # noqa: E402


def verdict(kind, reason="", tail=""):
    return {"kind": kind, "reason": reason, "tail": tail}


def unit(signature, opcode, **verdicts):
    v = {"interp": verdict("supported"), "rules:cpu": verdict("supported"),
         "xla:cpu": verdict("supported", tail="compared with interp: 1 output agree"),
         "iree:llvm-cpu": verdict("supported", tail="compared with interp: 1 output agree"),
         agreement.PROFILE: verdict("supported")}
    names = {"xla_cpu": "xla:cpu", "iree_llvm_cpu": "iree:llvm-cpu", "rules_cpu": "rules:cpu", "interp": "interp",
             "recorded": agreement.PROFILE}
    v.update({names[k]: x for k, x in verdicts.items()})
    return {"opcode": opcode, "type": agreement.element_type(signature), "signature": signature, "probed": True,
            "sources": {"opinfo"}, "inputs": {"x"}, "aten_ops": set(), "verdicts": v}


class Figures(unittest.TestCase):
    def test_counts_runs_agreement_and_numbers(self):
        units = {
            "a": unit("f32[2]{0} add(f32[2]{0}, f32[2]{0})", "add"),
            # XLA refuses what the others run: every pair with xla disagrees.
            "b": unit("f32[] constant(1)", "constant",
                      xla_cpu=verdict("unsupported", "compile: LiteralProto has no layout"),
                      recorded=verdict("unsupported")),
            # IREE runs but its numbers differ: it still runs, so it agrees on running.
            "c": unit("(f32[8]{0}, s64[8]{0}) sort(f32[8]{0}, s64[8]{0}), is_stable=true", "sort",
                      iree_llvm_cpu=verdict("unsupported", "numerics: output 1 element [3]: got 0, interp 3")),
        }
        units["d"] = dict(unit("f32[2]{0} add(f32[2]{0}, f32[2]{0})", "add"), probed=False)  # not probed: left out
        f = agreement.figures(units)
        self.assertEqual(f["units"], 3)
        self.assertEqual(f["xla_runs"], 2)
        self.assertEqual(f["iree_runs"], 3)
        self.assertEqual(f["rules_xla_agree"], 2)
        self.assertEqual(f["interp_xla_agree"], 2)
        self.assertEqual(f["iree_xla_agree"], 2)
        self.assertEqual(f["rules_iree_agree"], 3)
        self.assertEqual(f["recorded_profile_xla_agree"], 3)
        self.assertEqual(f["iree_numbers_differ"], 1)
        self.assertEqual(f["iree_numbers_match"], 2)
        self.assertEqual(f["xla_numbers_match"], 2)

    def test_a_regression_fails_and_an_improvement_does_not(self):
        want = {"units": 10, "rules_xla_agree": 9, "xla_numbers_differ": 0, "txla_calls": 5, "txla_same_HLO": 3}
        self.assertEqual(agreement.regressions(dict(want), want, ["backends", "torch_xla"]), [])
        better = dict(want, rules_xla_agree=10, txla_same_HLO=4)
        self.assertEqual(agreement.regressions(better, want, ["backends", "torch_xla"]), [])
        worse = dict(want, rules_xla_agree=8, xla_numbers_differ=1)
        bad = agreement.regressions(worse, want, ["backends"])
        self.assertEqual(bad, ["rules_xla_agree: 8 (recorded 9)", "xla_numbers_differ: 1 (recorded 0)"])
        # Another set of units (a changed lowering or input) asks for the doc to be regenerated.
        self.assertIn("regenerate docs/agreement.md",
                      agreement.regressions(dict(want, units=11), want, ["backends"])[0])
        # Only the parts computed are checked.
        self.assertEqual(agreement.regressions(dict(want, txla_same_HLO=0), want, ["backends"]), [])
        self.assertEqual(agreement.regressions(dict(want, txla_same_HLO=0), want, ["torch_xla"]),
                         ["txla_same_HLO: 0 (recorded 3)"])

    def test_classes_leave_out_numbers(self):
        self.assertEqual(agreement.unit_class("f32[2,3]{1,0} add(f32[2,3]{1,0}, f32[2,3]{1,0})"),
                         agreement.unit_class("f32[7,9]{1,0} add(f32[7,9]{1,0}, f32[7,9]{1,0})"))
        self.assertNotEqual(agreement.unit_class("f32[2]{0} add(f32[2]{0}, f32[2]{0})"),
                            agreement.unit_class("f64[2]{0} add(f64[2]{0}, f64[2]{0})"))


    def test_the_cheapest_units_stand_for_a_sampled_class(self):
        self.assertEqual(agreement.elements("f32[2,3]{1,0} add(f32[2,3]{1,0}, f32[])"), 13)
        self.assertEqual(agreement.elements("f32[<=4,2]{1,0} set-dimension-size(f32[4,2]{1,0}, s32[])"), 17)


def chip_unit(signature, opcode, **verdicts):
    """A unit every chip target and profile compiles unless told (tpu_v4=verdict(...), rules_tpu=...)."""
    u = unit(signature, opcode)
    u["verdicts"] = {b: verdict("supported") for b in agreement.chip_backends()}
    u["verdicts"].update({b: verdicts[agreement.fig_key(b)] for b in agreement.chip_backends()
                          if agreement.fig_key(b) in verdicts})
    return u


class Chips(unittest.TestCase):
    """The real chips' section on made-up verdicts, with profile files in a folder of the test's own."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = agreement.PROFILES
        agreement.PROFILES = self.tmp.name
        for name in ("tpu", "gpu", "tpu-v4"):
            open(os.path.join(self.tmp.name, name + ".json"), "w").close()

    def tearDown(self):
        agreement.PROFILES = self.saved
        self.tmp.cleanup()

    def test_a_generation_with_its_own_profile_is_compared_with_both(self):
        self.assertEqual(agreement.chip_profiles("tpu:v4"), ["tpu", "tpu-v4"])
        self.assertEqual(agreement.chip_profiles("tpu:v5e"), ["tpu"])
        self.assertEqual(agreement.chip_profiles("gpu:a100"), ["gpu"])
        self.assertEqual(agreement.chip_backends()[-3:], ["rules:gpu", "rules:tpu", "rules:tpu-v4"])

    def test_figures(self):
        refused = verdict("unsupported", "compile: UNIMPLEMENTED: INT2 is not supported for rank 1")
        units = {
            "a": chip_unit("f32[2]{0} add(f32[2]{0}, f32[2]{0})", "add"),
            # v4 refuses what v5e compiles; its own profile knows, the family's does not.
            "b": chip_unit("s2[2]{0} add(s2[2]{0}, s2[2]{0})", "add", tpu_v4=refused,
                           rules_tpu_v4=verdict("unsupported", "x")),
            # A crash is an error and not a compile; gpu:a100 differs from gpu:h100.
            "c": chip_unit("c128[4]{0} fft(c128[4]{0})", "fft", gpu_a100=verdict("error", "crashed")),
        }
        units["d"] = dict(chip_unit("f32[] constant(1)", "constant"), probed=False)
        f = agreement.chip_figures(units)
        self.assertEqual(f["chip_units"], 3)
        self.assertEqual(f["tpu_v4_compiles"], 2)
        self.assertEqual(f["tpu_v5e_compiles"], 3)
        self.assertEqual(f["rules_tpu_tpu_v4_agree"], 2)
        self.assertEqual(f["rules_tpu_v4_tpu_v4_agree"], 3)
        self.assertNotIn("rules_tpu_v4_tpu_v5e_agree", f)
        self.assertEqual(f["tpu_v4_tpu_v5e_same"], 2)
        # An error is no verdict: agreement counts the answered units only.
        self.assertEqual(f["gpu_a100_errors"], 1)
        self.assertEqual(f["gpu_a100_answered"], 2)
        self.assertEqual(f["gpu_a100_compiles"], 2)
        self.assertEqual(f["gpu_a100_gpu_h100_same"], 2)
        self.assertEqual(f["rules_gpu_gpu_a100_agree"], 2)
        # The section lists the generations' difference and the profile's with the compiler's message.
        text = "\n".join(agreement.chip_section(units, {}, f, 5, "scripts/agreement --part chips"))
        self.assertIn("#### tpu:v4 vs tpu:v5e (1 unit)", text)
        self.assertIn("#### rules:tpu vs tpu:v4 (1 unit)", text)
        self.assertIn("#### rules:tpu-v4 vs tpu:v4 (0 units)", text)
        self.assertIn("INT2 is not supported for rank 1", text)
        self.assertIn("**error** `fft` c128 (1 unit)", text)
        self.assertIn("#### rules:gpu vs gpu:a100 (0 units)", text)

    def test_regressions(self):
        want = {"chip_units": 10, "rules_tpu_tpu_v5e_agree": 10, "tpu_v5e_compiles": 9, "tpu_v5e_errors": 0,
                "tpu_v4_tpu_v5e_same": 10}
        self.assertEqual(agreement.chip_regressions(dict(want), want), [])
        # The generations drifting apart is the compilers' fact, not a regression.
        self.assertEqual(agreement.chip_regressions(dict(want, tpu_v4_tpu_v5e_same=9), want), [])
        worse = dict(want, rules_tpu_tpu_v5e_agree=9, tpu_v5e_compiles=8, tpu_v5e_errors=1)
        self.assertEqual(agreement.chip_regressions(worse, want), [
            "rules_tpu_tpu_v5e_agree: 9 (recorded 10)", "tpu_v5e_compiles: 8 (recorded 9)",
            "tpu_v5e_errors: 1 (recorded 0)"])
        self.assertIn("--part chips", agreement.chip_regressions(dict(want, chip_units=11), want)[0])

    def test_the_section_replaces_only_itself(self):
        doc = os.path.join(self.tmp.name, "agreement.md")
        before = "# A\n\n## Lowering gaps\n\n- x\n\n"
        after = "## Explained differences\n\ny\n\n<!-- quick-figures\n{}\n-->\n"
        with open(doc, "w") as f:
            f.write(before + after)
        section = [agreement.CHIPS_BEGIN, "## Real", "", agreement.CHIP_FIGURES_BEGIN, '{"chip_units": 3}',
                   agreement.FIGURES_END, agreement.CHIPS_END]
        agreement.splice_chips(doc, section)
        with open(doc) as f:
            first = f.read()
        self.assertEqual(first, before + "\n".join(section) + "\n\n" + after)
        self.assertEqual(agreement.recorded_chip_figures(doc), {"chip_units": 3})
        self.assertEqual(agreement.recorded_figures(doc), {})
        agreement.splice_chips(doc, section[:1] + ["## Other"] + section[2:])
        with open(doc) as f:
            self.assertEqual(f.read(), first.replace("## Real", "## Other"))


class Explanations(unittest.TestCase):
    def test_the_side_that_does_not_run_is_explained(self):
        u = unit("f64[3]{0} tanh(f64[3]{0})", "tanh",
                 iree_llvm_cpu=verdict("unsupported",
                                       "compile: INVALID_ARGUMENT: iree-compile: undefined symbol: tanh"))
        self.assertIn("link no C math library", explanations.explain("iree:llvm-cpu", "xla:cpu", u))
        self.assertIn("link no C math library", explanations.explain("xla:cpu", "iree:llvm-cpu", u))
        # The same message from another backend is not IREE's limit.
        v = unit("f64[3]{0} tanh(f64[3]{0})", "tanh", xla_cpu=verdict("unsupported", "undefined symbol: tanh"))
        self.assertIsNone(explanations.explain("interp", "xla:cpu", v))

    def test_unknown_differences_stay_unexplained(self):
        u = unit("f32[3]{0} cosine(f32[3]{0})", "cosine", xla_cpu=verdict("unsupported", "compile: something new"))
        self.assertIsNone(explanations.explain("rules:cpu", "xla:cpu", u))
        self.assertIsNone(explanations.explain_numbers("xla:cpu", u))

    def test_iree_compiler_crash_explained_only_for_empty_operands(self):
        crash = verdict("error", "IREE crashed: the worker was killed by signal 8 (SIGFPE)")
        empty = unit("f32[2,2]{1,0} dot(f32[2,0]{1,0}, f32[0,2]{1,0}), lhs_contracting_dims={1}, "
                     "rhs_contracting_dims={0}", "dot", iree_llvm_cpu=crash)
        self.assertIn("contracting dimension is 0", explanations.explain("iree:llvm-cpu", "xla:cpu", empty))
        full = unit("f32[2,2]{1,0} dot(f32[2,10]{1,0}, f32[10,2]{1,0}), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}", "dot", iree_llvm_cpu=crash)
        self.assertIsNone(explanations.explain("iree:llvm-cpu", "xla:cpu", full))

    def test_iree_normal_rng_explained_for_f64_not_f32(self):
        bad = verdict("unsupported", "compile: INVALID_ARGUMENT: iree-compile: 'stablehlo.broadcast' op requires "
                      "the same element type for all operands and results")
        f64 = unit("f64[10]{0} rng(f64[], f64[]), distribution=rng_normal", "rng", iree_llvm_cpu=bad)
        f32 = unit("f32[10]{0} rng(f32[], f32[]), distribution=rng_normal", "rng", iree_llvm_cpu=bad)
        self.assertIn("f32 arithmetic only", explanations.explain("iree:llvm-cpu", "xla:cpu", f64))
        self.assertIsNone(explanations.explain("iree:llvm-cpu", "xla:cpu", f32))

    def test_torch_xla_result_packaging_explained_only_without_opcode_differences(self):
        same = {"op": "aten::clone", "missing": [], "extra": [],
                "verdicts": {"neuron-trn1": ("supported", "unsupported")}}
        self.assertIn("result packaging", explanations.explain_torch_xla(same))
        other = dict(same, extra=[("copy", "c64")])
        self.assertIsNone(explanations.explain_torch_xla(other))

    def test_eigenvectors_explained_but_not_eigenvalues(self):
        sig = '(f32[4,4]{1,0}, f32[4]{0}) custom-call(f32[4,4]{1,0}), custom_call_target="Eigh"'
        vectors = unit(sig, "custom-call", xla_cpu=verdict("unsupported", "numerics: output 0 element [0,1]: got 1"))
        values = unit(sig, "custom-call", xla_cpu=verdict("unsupported", "numerics: output 1 element [2]: got 1"))
        self.assertIn("unique only up to sign", explanations.explain_numbers("xla:cpu", vectors))
        self.assertIsNone(explanations.explain_numbers("xla:cpu", values))


class TorchXlaHlo(unittest.TestCase):
    HLO = """HloModule IrToHlo.22, entry_computation_layout={(f32[8]{0})->(f32[8]{0}, s64[8]{0})}

%compare-less-than.9 (p.0.lhs.10: f32[], p.0.rhs.11: f32[], p.1.lhs.12: s32[], p.1.rhs.13: s32[]) -> pred[] {
  %p.0.lhs.10 = f32[] parameter(0)
  ROOT %compare.14 = pred[] compare(f32[] %p.0.lhs.10, f32[] %p.0.rhs.11), direction=LT, type=TOTALORDER
}

ENTRY %IrToHlo.22 (p0.1: f32[8]) -> (f32[8], s64[8]) {
  %p0.1 = f32[8]{0} parameter(0)
  %constant.1 = f32[] constant(1)
  %iota.2 = s32[8]{0} iota(), iota_dimension=0
  %sort.15 = (f32[8]{0}, s32[8]{0}) sort(f32[8]{0} %p0.1, s32[8]{0} %iota.2), dimensions={0},
  to_apply=%compare-less-than.9
  %get-tuple-element.18 = s32[8]{0} get-tuple-element((f32[8]{0}, s32[8]{0}) %sort.15), index=1
  %convert.20 = s64[8]{0} convert(s32[8]{0} %get-tuple-element.18)
  ROOT %tuple.21 = (f32[8]{0}, s64[8]{0}) tuple(f32[8]{0} %p0.1, s64[8]{0} %convert.20)
}
"""

    def test_opcodes_and_types_of_every_computation_without_structure(self):
        self.assertEqual(txla.opcode_types(self.HLO), {("compare", "pred"), ("iota", "s32"), ("sort", "f32,s32"),
                                                       ("convert", "s64")})

    def test_explanations_match_the_difference_they_state(self):
        sort = {"op": "aten::sort.stable", "missing": [("convert", "s64"), ("iota", "s32"), ("sort", "f32,s32")],
                "extra": [("iota", "s64"), ("sort", "f32,s64")]}
        self.assertIn("indices as s32", explanations.explain_torch_xla(sort))
        # The same difference on an op no rule names, or another difference on sort, stays unexplained.
        self.assertIsNone(explanations.explain_torch_xla(dict(sort, op="aten::cumsum")))
        self.assertIsNone(explanations.explain_torch_xla(dict(sort, missing=[("while", "s32")])))

    def test_figures_count_statuses(self):
        rows = [{"status": "same HLO", "results": "match", "verdicts": {}},
                {"status": "HLO differs", "results": "mismatch", "verdicts": {"tpu": ("supported", "unsupported")}},
                {"status": "torch_xla CPU fallback", "results": None, "verdicts": {}}]
        self.assertEqual(txla.figures(rows), {"txla_CPU_fallback": 1, "txla_HLO_differs": 1, "txla_calls": 3,
                                              "txla_results_match": 1, "txla_results_mismatch": 1, "txla_same_HLO": 1,
                                              "txla_verdict_changes": 1})


if __name__ == "__main__":
    unittest.main()
