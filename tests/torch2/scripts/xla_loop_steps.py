# A torch_xla training loop written as users write it, in the variants that make torch_xla compile again
# (issue #28): python xla_loop_steps.py MODE, MODE one of
#   steady      every batch the same size, nothing read back: one graph
#   last_small  a last batch smaller than the others (no drop_last): a second graph for its shapes
#   warmup      a learning-rate warmup factor: a Python float passed as data, still one graph
#   slice       a slice whose size follows the step: a size baked into the graph
#   nonzero     torch.nonzero inside the step: a CPU fallback cuts each step in two
#   print       the loss printed every step (.item(); print_tensor: the tensor; branch: an `if` on it): a cut
# tests/e2e/steps_test.cpp compares opprobe's count of graphs with the real torch_xla's and names these lines:
# keep them where they are.
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

MODE = sys.argv[1] if len(sys.argv) > 1 else "steady"
dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data, target = torch.randn(10, 8), torch.randint(0, 4, (10,))
batches = [(data[i:i + 4], target[i:i + 4]) for i in range(0, 10, 4)]  # 4, 4 and a last batch of 2
batches = batches * 2 if MODE == "last_small" else batches[:2] * 3
for step, (x, y) in enumerate(batches):
    x, y = x.to(dev), y.to(dev)
    if MODE == "warmup":
        for group in opt.param_groups:
            group["lr"] = 0.1 * min(1.0, (step + 1) / 3)
    opt.zero_grad()
    out = model(x)
    if MODE == "slice":
        out = out[:, :2 + step % 2]  # line 33: a size that follows the step
        y = y % (2 + step % 2)
    loss = nn.functional.cross_entropy(out, y)
    if MODE == "nonzero":
        loss = loss + 0.0 * torch.nonzero(out > 0).shape[0]  # line 37: a CPU fallback
    loss.backward()
    opt.step()
    if MODE == "print":
        print("step", step, "loss", loss.item())  # line 41: a value read
    if MODE == "print_tensor":
        print("loss", loss)  # line 43: printing a tensor reads it
    if MODE == "branch" and loss > 100.0:  # line 44: a Python branch on a tensor reads it
        print("diverged")
    xm.mark_step()
