# A PyTorch/XLA 2.x script (torch_xla.device, torch_xla.step, torch_xla.compile, torch_xla.sync,
# torch.compile with the openxla backend), written the way its users write them; used by
# tests/e2e/standins_test.cpp.
import torch
import torch.nn as nn
import torch_xla


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        return self.norm(torch.sigmoid(self.proj(x)))


device = torch_xla.device()
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch_xla.compile
def train_step(x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


for i in range(2):
    with torch_xla.step():
        x = torch.randn(4, 6, device=device)
        loss = train_step(x)
torch_xla.sync()

inference = torch.compile(model, backend="openxla")
with torch.no_grad():
    out = inference(torch.ones(2, 6).to(device))
    print(out.sum().item())
