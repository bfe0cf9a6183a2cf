# A torch_xla training loop fed by a DataLoader through torch_xla's MpDeviceLoader (which moves each batch to the
# device and marks a step after it), as torch_xla's examples write it: python xla_loop_loader.py [drop_last|keep_last].
# 10 samples in batches of 4: with drop_last=True two steps a pass, one graph; without it a last batch of 2 and a
# second graph. tests/e2e/steps_test.cpp compares opprobe's count with the real torch_xla's.
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset

drop_last = (sys.argv[1] if len(sys.argv) > 1 else "drop_last") == "drop_last"
dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = TensorDataset(torch.randn(10, 8), torch.randint(0, 4, (10,)))
loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=4, drop_last=drop_last), dev)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)  # line 23
        loss.backward()
        opt.step()
