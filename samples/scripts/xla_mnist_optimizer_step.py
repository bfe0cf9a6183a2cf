# PyTorch/XLA's "Native PyTorch API" training loop (xm.optimizer_step), as printed in its API guide. The guide's
# snippet uses MNIST, nn, optim, lr, momentum and train_loader without defining them; the lines up to the
# marker below define them (the MNIST network of PyTorch/XLA's MNIST example, on synthetic 28x28 images
# instead of a download). Everything after the marker is the guide's code unchanged.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class MNIST(nn.Module):
  def __init__(self):
    super(MNIST, self).__init__()
    self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
    self.bn1 = nn.BatchNorm2d(10)
    self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
    self.bn2 = nn.BatchNorm2d(20)
    self.fc1 = nn.Linear(320, 50)
    self.fc2 = nn.Linear(50, 10)

  def forward(self, x):
    x = F.relu(F.max_pool2d(self.conv1(x), 2))
    x = self.bn1(x)
    x = F.relu(F.max_pool2d(self.conv2(x), 2))
    x = self.bn2(x)
    x = torch.flatten(x, 1)
    x = F.relu(self.fc1(x))
    x = self.fc2(x)
    return F.log_softmax(x, dim=1)


lr = 0.01
momentum = 0.5
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))), batch_size=4)
# ---- the guide's code ----
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = MNIST()
loss_fn = nn.NLLLoss()
optimizer = optim.SGD(model.parameters(), lr=lr, momentum=momentum)

model.train()
for data, target in train_loader:
  optimizer.zero_grad()
  data = data.to(device)
  target = target.to(device)
  output = model(data)
  loss = loss_fn(output, target)
  loss.backward()
  xm.optimizer_step(optimizer, barrier=True)
