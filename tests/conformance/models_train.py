# One training step (forward, backward, SGD step) and one more with Adam, of a named model.
import sys
import torch
import torchvision
name = sys.argv[1]
torch.manual_seed(0)
def vision(ctor, size=32, **kw):
    m = ctor(weights=None, **kw)
    return m, (torch.rand(2, 3, size, size),), lambda out: torch.nn.functional.cross_entropy(out, torch.tensor([1, 2]))
if name == "vit_b_16":
    m, x, lf = vision(torchvision.models.vit_b_16, 32, image_size=32)
elif name == "swin_t":
    m, x, lf = vision(torchvision.models.swin_t, 64)
elif name in ("wav2vec2_base",):
    import torchaudio
    m = torchaudio.models.wav2vec2_base()
    x = (torch.rand(2, 4000),)
    lf = lambda out: out[0].sum()
elif name == "conformer":
    import torchaudio
    m = torchaudio.models.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2, depthwise_conv_kernel_size=7)
    x = (torch.rand(2, 10, 16), torch.tensor([10, 8]))
    lf = lambda out: out[0].sum()
else:
    m, x, lf = vision(getattr(torchvision.models, name), 32)
m.train()
for opt in (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), torch.optim.Adam(m.parameters(), lr=1e-3)):
    opt.zero_grad()
    loss = lf(m(*x))
    loss.backward()
    opt.step()
