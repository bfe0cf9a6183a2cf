# samples/scripts/unsupported.py (AWS Neuron's tutorial example) rewritten as `opprobe analyze --suggest` says on
# rules:neuron-trn1: the FFT as a DFT-matrix product and the complex multiply on view_as_real pairs.
# `python unsupported_rewritten.py --check` (no torch_xla needed: the CPU) also asserts that its result is the
# original's, as real pairs: torch.view_as_complex(output) == (x + 10) * torch.fft.fft(x).
import math
import sys

import torch

try:
    import torch_xla.core.xla_model as xm
except ImportError:  # --check on a machine without torch_xla
    xm = None


class RewrittenModel(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        k = torch.outer(torch.arange(n, dtype=torch.float64), torch.arange(n, dtype=torch.float64)) * (2 * math.pi / n)
        self.register_buffer("C", torch.cos(k).to(torch.float32))  # once, outside the step
        self.register_buffer("S", (-torch.sin(k)).to(torch.float32))

    def forward(self, x):
        y_ri = torch.stack((x @ self.C, x @ self.S), -1)  # torch.fft.fft(x) as (..., n, 2) real pairs
        x = x + 10
        return x.unsqueeze(-1) * y_ri  # x * y, kept as pairs


def main():
    device = xm.xla_device() if xm else torch.device("cpu")

    model = RewrittenModel(4).to(device)

    inp = torch.rand(4)

    model.train()
    for epoch in range(1):
        inp = inp.to(device)
        output = model(inp)

        if xm:
            xm.mark_step()

    if "--check" in sys.argv:
        x = inp.cpu()
        want = (x + 10) * torch.fft.fft(x)
        got = torch.view_as_complex(output.cpu().contiguous())
        assert torch.allclose(got, want, rtol=1.3e-4, atol=1e-5), (got, want)
        print("the rewritten model's values are the original's")


if __name__ == '__main__':
    main()
