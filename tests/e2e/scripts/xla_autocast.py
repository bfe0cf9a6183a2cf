# Mixed precision as torch_xla's users write it: torch.autocast("xla") (PyTorch 1.13 accepts only cuda and cpu as a
# device type) and torch_xla.amp.autocast. Under the real torch_xla both run the linear layers in bfloat16.
import torch
import torch_xla.amp
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dev)
x = torch.randn(2, 8).to(dev)
with torch.autocast("xla", dtype=torch.bfloat16):
    y = model(x)
with torch_xla.amp.autocast(dev):
    z = model(x)
print("dtypes", y.dtype, z.dtype)
loss = y.float().sum() + z.float().sum()
loss.backward()
xm.mark_step()
