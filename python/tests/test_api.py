"""Tests of the Python API (python/opprobe) with whichever PyTorch the interpreter has (1.13 or 2.x).

Run: PYTHONPATH=python OPPROBE_BIN=build/opprobe PYTHON -m unittest discover -s python/tests -v
(scripts/test runs it through ctest with /usr/bin/python3 and with the torch2 virtual environment).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

import opprobe

HERE = os.path.basename(__file__)


def op_names(section):
    """Op names of a report's supported_operators ({category: {op: ...}}) or unsupported_operators
    ({category: [{"kind": op, ...}]}), without the `xla` instruction list."""
    out = set()
    for category, ops in section.items():
        if category == "xla":  # HLO instructions (verbosity 1), not ops
            continue
        out.update(ops.keys() if isinstance(ops, dict) else (e["kind"] for e in ops))
    return out


def pct(report):
    """support_percentage as a number (the report writes it as Neuron does: "87.50%")."""
    text = report["support_percentage"]
    assert text.endswith("%"), text
    return float(text[:-1])


class FftMul(torch.nn.Module):
    # AWS Neuron's unsupported example: a real tensor times the complex result of an FFT.
    def forward(self, x):
        return x * torch.fft.fft(x)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class AnalyzeTest(unittest.TestCase):
    def test_linear_on_trn1_gives_a_percentage(self):
        r = opprobe.analyze(torch.nn.Linear(4, 2), (torch.randn(3, 4),), backend="rules:neuron-trn1")
        self.assertEqual(r["support_percentage"], "100.00%")
        self.assertEqual(r["backend"], "rules:neuron-trn1")
        self.assertEqual(r["model"], "opprobe.analyze(Linear)")
        self.assertEqual(r["input_kind"], "trace")
        self.assertEqual(r["torch_version"], str(torch.__version__))
        self.assertIn("aten::addmm", op_names(r["supported_operators"]))
        self.assertEqual(op_names(r["unsupported_operators"]), set())

    def test_unsupported_op_named_with_the_callers_line(self):
        x = torch.rand(4)
        r = opprobe.analyze(FftMul(), (x,), backend="rules:neuron-trn1", verbosity=1)
        self.assertLess(pct(r), 100)
        unsupported = op_names(r["unsupported_operators"])
        self.assertIn("aten::mul", unsupported)
        text = json.dumps(r["unsupported_operators"])
        self.assertIn(HERE, text)  # the call site is the forward() line in this file
        self.assertIn("c64", text)

    def test_suggest(self):
        # analyze(suggest=True) is `analyze --suggest`: both blockers get a rewrite the profile accepts.
        r = opprobe.analyze(FftMul(), (torch.rand(4),), backend="rules:neuron-trn1", suggest=True)
        entries = [e for e in r["unsupported_operators"]["aten"] if "part_of" not in e]
        self.assertEqual({e["kind"] for e in entries}, {"aten::_fft_r2c", "aten::mul"})
        for e in entries:
            self.assertTrue(e["suggestions"][0]["verified"], e)
            self.assertEqual(e["suggestions"][0]["backend"], "rules:neuron-trn1")
        self.assertEqual(r["what_if_support_percentage"], "100.00%")

    def test_several_targets_in_one_report(self):
        r = opprobe.analyze(FftMul(), (torch.rand(4),), backend=["rules:neuron-trn1", "rules:cpu"])
        self.assertEqual(r["backend"], "rules:neuron-trn1")
        self.assertEqual([t["backend"] for t in r["targets"]], ["rules:neuron-trn1", "rules:cpu"])
        self.assertLess(float(r["targets"][0]["support_percentage"].rstrip("%")), 100)
        self.assertEqual(r["targets"][1]["support_percentage"], "100.00%")

    def test_function_and_dict_inputs(self):
        def f(a, b):
            return torch.tanh(a) + b

        r = opprobe.analyze(f, {"a": torch.randn(2, 3), "b": torch.randn(2, 3)}, backend="rules:cpu")
        self.assertEqual(r["model"], "opprobe.analyze(f)")
        self.assertEqual({"aten::tanh", "aten::add"} - op_names(r["supported_operators"]), set())

    def test_training_step_records_backward_and_optimizer(self):
        torch.manual_seed(0)
        model = Mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        before = model.fc1.weight.detach().clone()
        doc = opprobe.record(model, (torch.randn(5, 4),), train=True,
                             loss_fn=lambda out: torch.nn.functional.mse_loss(out, torch.zeros(5, 2)), optimizer=opt)
        phases = {c["phase"] for c in doc["calls"]}
        self.assertEqual(phases, {"forward", "backward", "optimizer"})
        self.assertFalse(torch.equal(before, model.fc1.weight.detach()))  # the step really ran
        fwd = [c for c in doc["calls"] if c["phase"] == "forward" and c["op"] == "aten::addmm"]
        self.assertEqual({c["module_path"] for c in fwd}, {"fc1", "fc2"})
        r = opprobe.analyze(model, (torch.randn(5, 4),), train=True, optimizer=opt, backend="interp")
        names = op_names(r["supported_operators"]) | op_names(r["unsupported_operators"])
        self.assertIn("aten::threshold_backward", names)
        self.assertEqual(r["summary"]["lowering_failures"], 0)

    def test_fake_fit_of_a_meta_model(self):
        # A model on the meta device, its AdamW step on fake tensors, compiled whole for one TPU v5e chip.
        if int(torch.__version__.split(".")[0]) < 2:
            with self.assertRaises(opprobe.OpprobeError) as e:
                opprobe.analyze(Mlp(), (torch.randn(5, 4),), fake=True)
            self.assertIn("needs PyTorch 2.x", str(e.exception))
            return
        with torch.device("meta"):
            model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 8))
        opt = torch.optim.AdamW(model.parameters())
        r = opprobe.analyze(model, (torch.randn(16, 1024),), train=True, optimizer=opt, backend="tpu:v5e", fake=True,
                            fit=True)
        p = r["program"]
        self.assertEqual(p["outcome"], "compiled", p["headline"])
        self.assertTrue(p["fits"])
        params = (1024 * 4096 + 4096 + 4096 * 8 + 8) * 4
        self.assertEqual(p["estimate"]["alias_bytes"], params, "the parameters are updated in place (donated)")
        self.assertAlmostEqual(p["memory"]["alias_bytes"] / params, 1.0, delta=0.01)  # TPU tiles pad a little
        kinds = {c["what"]: c["bytes"] for c in p["contributors"]}
        self.assertEqual(kinds["parameters"], params)
        self.assertEqual(kinds["optimizer state"], 2 * params + 4 * 4)  # two moments and a step count per parameter
        # A real model's weights would be changed by a fake step: refused.
        with self.assertRaises(opprobe.OpprobeError) as e:
            opprobe.analyze(Mlp(), (torch.randn(5, 4),), fake=True)
        self.assertIn("build the model on the meta device", str(e.exception))

    def test_ignore_ops_leaves_them_out(self):
        x = torch.rand(4)
        r = opprobe.analyze(FftMul(), (x,), backend="rules:neuron-trn1", ignore_ops=("aten::mul",))
        names = op_names(r["supported_operators"]) | op_names(r["unsupported_operators"])
        self.assertNotIn("aten::mul", names)
        self.assertIn("aten::_fft_r2c", names)

    def test_bad_backend_raises_with_the_binarys_message(self):
        with self.assertRaises(opprobe.OpprobeError) as cm:
            opprobe.analyze(torch.nn.Linear(2, 2), (torch.randn(1, 2),), backend="rules:no-such-profile")
        self.assertIn(cm.exception.exit_code, (2, 3))
        self.assertIn("no-such-profile", str(cm.exception))

    def test_missing_binary_raises(self):
        old = os.environ.get("OPPROBE_BIN")
        os.environ["OPPROBE_BIN"] = "/nonexistent/opprobe"
        try:
            with self.assertRaises(opprobe.OpprobeError) as cm:
                opprobe.analyze(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
            self.assertIn("/nonexistent/opprobe", str(cm.exception))
        finally:
            if old is None:
                del os.environ["OPPROBE_BIN"]
            else:
                os.environ["OPPROBE_BIN"] = old

    def test_autograd_is_restored(self):
        backward = torch.autograd.backward
        opprobe.record(Mlp(), (torch.randn(2, 4),), train=True)
        self.assertIs(torch.autograd.backward, backward)

    def test_python_m_opprobe_is_the_cli(self):
        p = subprocess.run([sys.executable, "-m", "opprobe", "backends"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("neuron-trn1", p.stdout)
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "t.json")
            opprobe.analyze(torch.nn.Linear(4, 2), (torch.randn(3, 4),), trace_path=trace)
            p = subprocess.run([sys.executable, "-m", "opprobe", "analyze", trace, "--backend", "rules:tpu", "-o",
                                os.path.join(d, "r.json"), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "r.json")) as f:
                self.assertEqual(json.load(f)["support_percentage"], "100.00%")


if __name__ == "__main__":
    unittest.main()
