"""A torch_xla SPMD training step, written as torch_xla's SPMD guide shows it: a 2x4 device mesh over the 8 chips of a
v5p-8 slice (data x model), the two linear layers' weights split Megatron-style over the model axis and the batch over
the data axis with xs.mark_sharding, one SGD step. `opprobe analyze --fit` compiles the step split as marked
(tests/e2e/fit_test.cpp)."""
import numpy as np
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()
device = xm.xla_device()
mesh = xs.Mesh(np.arange(8), (2, 4), ("data", "model"))

model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).to(device)
xs.mark_sharding(model[0].weight, mesh, ("model", None))  # column split: output features
xs.mark_sharding(model[2].weight, mesh, (None, "model"))  # row split: input features
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

x = torch.randn(64, 256).to(device)
xs.mark_sharding(x, mesh, ("data", None))
loss = model(x).pow(2).mean()
loss.backward()
optimizer.step()
xm.mark_step()
print("loss", loss.item())
