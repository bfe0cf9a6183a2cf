# One training step of a decoder written for the CPU, as its users write it: python decoder_step.py [SIZE] with SIZE
# `tiny` (the tests' real-and-fake comparison), `1b` (about a billion parameters: only with --fake, or on the meta
# device with META=1), `7b` (6.7e9 parameters, 32 layers) or `7b-shape` (the 7b's 32 layers at tiny width: as many
# calls; scripts/bench fake). tests/e2e/fake_test.cpp.
import os
import sys

import torch
import torch.nn as nn

size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
if os.environ.get("META") == "1":
    torch.set_default_device("meta")
dim, layers, vocab = {"tiny": (64, 2, 100), "1b": (4096, 4, 32000), "7b": (4096, 32, 32000),
                      "7b-shape": (64, 32, 100)}[size]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 8, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm(x))


model = nn.Sequential(nn.Embedding(vocab, dim), *[Block() for _ in range(layers)], nn.Linear(dim, vocab))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
tokens = torch.randint(0, vocab, (2, 16))
logits = model(tokens)
loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens.reshape(-1))
loss.backward()
opt.step()
print("parameters", sum(p.numel() for p in model.parameters()))
