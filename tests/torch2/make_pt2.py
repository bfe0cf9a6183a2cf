"""Makes real torch.export programs with PyTorch 2.x for tests/e2e/torch2_pt2_test.cpp.

Usage: PYTHON tests/torch2/make_pt2.py OUT_DIR

Writes, per program, OUT_DIR/<name>.pt2 (or .json) and OUT_DIR/<name>.nodes.json: the program's own node
list (every call_function node in graph order, with the op as torch names it and the program it is in),
which the test compares with what opprobe's reader loads. OUT_DIR/manifest.json lists the files.

Programs: a torchvision CNN (resnet18), a transformer encoder with a dynamic batch dimension (Dim), a
model with a custom torch.library op, a PT2E-quantized model, a joint forward+backward training graph,
and the archive formats this torch can write: the PT2 archive of torch.export.save, a PT2 archive with
several programs (torch.export.pt2_archive's package_pt2), and a bare ExportedProgram JSON.
"""
import json
import warnings
import os
import sys

import torch
from torch.export import Dim, export

torch.manual_seed(0)
warnings.simplefilter("ignore", DeprecationWarning)  # torch.ao.quantization and XNNPACKQuantizer say they move
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
manifest = []


def target_name(t):
    """`aten::convolution.default`-style name of a call_function target (the op's own schema name)."""
    if isinstance(t, torch._ops.OpOverload):
        ns, rest = t._schema.name.split("::", 1)
        return "%s::%s.%s" % (ns, rest, t._overloadname)
    mod = getattr(t, "__module__", "") or ""
    return "%s.%s" % (mod, getattr(t, "__name__", str(t)))


def nodes_of(ep, program="model"):
    out = []
    for n in ep.graph.nodes:
        if n.op == "call_function":
            out.append({"program": program, "target": target_name(n.target)})
    return out


def write(name, file_name, nodes, **extra):
    with open(os.path.join(OUT, name + ".nodes.json"), "w") as f:
        json.dump(nodes, f)
    entry = {"name": name, "file": file_name, "nodes": name + ".nodes.json"}
    entry.update(extra)
    manifest.append(entry)


def save(name, ep, **extra):
    path = os.path.join(OUT, name + ".pt2")
    torch.export.save(ep, path)
    write(name, name + ".pt2", nodes_of(ep), **extra)


# 1. A torchvision CNN (inference, small input).
import torchvision  # noqa: E402

cnn = torchvision.models.resnet18(weights=None).eval()
save("resnet18", export(cnn, (torch.randn(1, 3, 64, 64),)))

# 2. A transformer encoder with a dynamic batch dimension.
layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
batch = Dim("batch", min=2, max=64)
save("encoder_dynamic", export(encoder, (torch.randn(4, 10, 32),), dynamic_shapes=({0: batch},)), dynamic=True)


# 3. A custom torch.library op inside a model.
@torch.library.custom_op("opprobe_test::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


class WithCustomOp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.ops.opprobe_test.scaled_tanh(self.fc(x), 0.5)


save("custom_op", export(WithCustomOp(), (torch.randn(2, 8),)))


# 4. A quantized model (PT2E quantization: quantize/dequantize ops around the convolution and linear).
class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(y.mean(dim=(2, 3)))


def quantized_program():
    from torch.ao.quantization.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torch.ao.quantization.quantizer.xnnpack_quantizer import (XNNPACKQuantizer,
                                                                     get_symmetric_quantization_config)
    example = (torch.randn(1, 3, 16, 16),)
    m = export(SmallConvNet().eval(), example).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    m = prepare_pt2e(m, quantizer)
    m(*example)  # calibration
    m = convert_pt2e(m)
    return export(m, example)


save("quantized", quantized_program())

# 5. A training graph: the joint forward + backward program.
from torch.export.experimental import _export_forward_backward  # noqa: E402

mlp = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


class WithLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, y):
        return (self.loss(self.net(x), y),)


train_ep = torch.export.export(WithLoss(), (torch.randn(5, 6), torch.tensor([0, 1, 2, 1, 0])))
joint = _export_forward_backward(train_ep)
save("joint_train", joint)

# 6. Archive formats: several programs in one PT2 archive, and a bare ExportedProgram JSON.
from torch.export.pt2_archive._package import package_pt2  # noqa: E402

eps = {"model": export(SmallConvNet().eval(), (torch.randn(1, 3, 16, 16),)),
       "head": export(torch.nn.Linear(4, 2), (torch.randn(3, 4),))}
package_pt2(os.path.join(OUT, "multi.pt2"), exported_programs=eps)
write("multi", "multi.pt2", nodes_of(eps["model"], "model") + nodes_of(eps["head"], "head"))

from torch._export.serde.serialize import serialize  # noqa: E402

bare_ep = export(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()), (torch.randn(2, 4),))
with open(os.path.join(OUT, "bare.json"), "wb") as f:
    f.write(serialize(bare_ep).exported_program)
write("bare", "bare.json", nodes_of(bare_ep, "bare"))

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump({"torch_version": str(torch.__version__), "programs": manifest}, f, indent=1)
print("wrote %d programs to %s" % (len(manifest), OUT))
