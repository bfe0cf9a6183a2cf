# AWS Neuron's "Analyze for Training" unsupported.py, rewritten for plain CPU PyTorch (no torch_xla):
# torch.fft.fft makes a complex64 tensor, so `x * y` multiplies in c64.
import torch


class UnsupportedModel(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.fft.fft(x)
        x = x + 10
        return x * y


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")

    model = UnsupportedModel().to(device)

    inp = torch.rand(4)

    model.train()
    for epoch in range(1):
        inp = inp.to(device)
        output = model(inp)


if __name__ == '__main__':
    main()
