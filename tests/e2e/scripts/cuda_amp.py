# A CUDA mixed-precision training script (.cuda(), .to("cuda"), device="cuda", torch.cuda.amp.autocast and
# GradScaler, torch.cuda.synchronize), written the way its users write them; used by
# tests/e2e/standins_test.cpp.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
assert torch.cuda.is_available(), "this script needs a GPU"
torch.backends.cudnn.benchmark = True

model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(8, 5)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scaler = torch.cuda.amp.GradScaler()
criterion = nn.CrossEntropyLoss().to(device)

for step in range(2):
    images = torch.randn(2, 3, 8, 8, device="cuda")
    labels = torch.randint(0, 5, (2,)).to("cuda", non_blocking=True)
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.amp.autocast():
        loss = criterion(model(images), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
torch.cuda.synchronize()


@torch.jit.script
def one_hot(labels: torch.Tensor, n: int) -> torch.Tensor:
    return torch.zeros(labels.shape[0], n, device=labels.device).scatter_(1, labels.unsqueeze(1), 1.0)


print("one-hot", one_hot(labels, 5).shape)
print("max memory", torch.cuda.max_memory_allocated() // 2**20, "MiB on", torch.cuda.get_device_name(0))
