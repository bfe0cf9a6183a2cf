# A torchax script (default_env, enable_globally, to_xla, interop.jax_jit, the `jax` device), written the way
# its users write them; used by tests/e2e/standins_test.cpp.
import torch
import torchax
import torchax.interop

torchax.enable_globally()
env = torchax.default_env()

model = torch.nn.Sequential(torch.nn.Conv1d(2, 4, 3), torch.nn.Flatten(), torch.nn.Linear(8, 2))
model = env.to_xla(model)
x = torch.randn(5, 2, 4, device="jax")


def forward(inputs):
    return torch.softmax(model(inputs), dim=-1)


jitted = torchax.interop.jax_jit(forward)
with env:
    y = jitted(x)
    z = torch.cumsum(y, dim=1).to("jax")
print(z.shape)
