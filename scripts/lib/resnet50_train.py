# One SGD training step of torchvision's resnet50 (random weights) on a small batch, on the CPU: the
# model `scripts/bench cache` captures (once, into build/bench/) and analyzes.
import torch
import torchvision


def main():
    torch.manual_seed(0)
    try:
        model = torchvision.models.resnet50(weights=None)
    except TypeError:  # torchvision < 0.13 has no `weights` argument
        model = torchvision.models.resnet50(pretrained=False)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.rand(2, 3, 64, 64)
    labels = torch.randint(0, 1000, (2,))
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    main()
