# A torch_xla training loop written as users write it, with two calls that torch_xla runs on the host CPU in every
# step: `torch.nonzero` (no device lowering: a CPU fallback) and the loss printed with `.item()` (a value read).
# tests/e2e/torch_xla_lowering_test.cpp names these lines: keep them where they are.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = 4

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(STEPS):
    x = torch.randn(4, 8).to(dev)
    y = torch.randint(0, 4, (4,)).to(dev)
    opt.zero_grad()
    out = model(x)
    active = torch.nonzero(out > 0)  # line 19: a CPU fallback in every step
    loss = nn.functional.cross_entropy(out, y) + 0.0 * active.shape[0]
    loss.backward()
    opt.step()
    print("step", step, "loss", loss.item())  # line 23: a value read in every step
    xm.mark_step()
