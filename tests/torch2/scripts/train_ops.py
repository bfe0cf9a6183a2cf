# The aten ops a PyTorch 2.x training step dispatches that 1.13 never did: foreach and fused optimizers
# (_foreach_*, _fused_adam_/_fused_adamw_/_fused_sgd_), the scaled-dot-product-attention variants
# (_scaled_dot_product_flash_attention_for_cpu and its backward), autocast (_to_copy), grad clipping
# (_foreach_norm), 3-d matmul (_unsafe_view). Captured on the torch2 tier by tests/torch2/CMakeLists.txt.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.bn = nn.BatchNorm1d(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        x = self.bn(x.transpose(1, 2)).transpose(1, 2)
        return x + self.mlp(x)


model = Block()
x = torch.randn(2, 8, 16)
optimizers = [
    torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True),
    torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True),
    torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True, amsgrad=True),
    torch.optim.Adam(model.parameters(), lr=1e-3, fused=True),
    torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True),
    torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True),
    torch.optim.RMSprop(model.parameters(), lr=1e-3, foreach=True),
    torch.optim.Adagrad(model.parameters(), lr=1e-3, foreach=True),
]
for opt in optimizers:
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
    opt.step()
print("loss", loss.item())
