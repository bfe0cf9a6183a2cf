# A PyTorch/XLA training loop as its users write it (classic xla_model API), for
# `opprobe analyze --lowering torch_xla` (tests/e2e/torch_xla_lowering_test.cpp).
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
torch.manual_seed(0)
for step in range(2):
    x = torch.randn(5, 8).to(device)
    y = torch.tensor([0, 1, 2, 3, 0]).to(device)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    xm.optimizer_step(optimizer, barrier=True)
xm.master_print("loss", loss.item())
