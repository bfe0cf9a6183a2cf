# A torchax script whose model needs three ops torchax 0.0.13 has no lowering for (adaptive max pooling, RReLU in
# training, Poisson sampling), written the way torchax's README shows: enable_globally, the model and
# data moved with .to("jax"). Run plainly under torchax it stops at the first (OperatorNotFound); tests/e2e/
# torchax_test.cpp checks that `opprobe analyze --lowering torchax` lists all three, with their lines, in one report.
import torch
import torchax

torchax.enable_globally()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.AdaptiveMaxPool2d(2)
        self.act = torch.nn.RReLU()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = self.pool(self.conv(x))  # GAP-1
        x = self.act(x.flatten(1))  # GAP-2
        y = self.fc(x)
        w = torch.poisson(y.abs())  # GAP-3
        return y.sum() + w.sum()


model = Net().to("jax")
x = torch.randn(2, 3, 8, 8, device="jax")
loss = model(x)
print("loss", loss.item())
