# One SGD training step of torchvision's resnet18 (random weights) on a small batch, on the CPU.
# Small on purpose: `opprobe capture` of this script takes a few seconds.
import argparse

import torch
import torchvision


def make_resnet18():
    try:
        return torchvision.models.resnet18(weights=None)
    except TypeError:  # torchvision < 0.13 has no `weights` argument
        return torchvision.models.resnet18(pretrained=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = make_resnet18()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    images = torch.rand(args.batch, 3, args.size, args.size)
    labels = torch.randint(0, 1000, (args.batch,))
    for step in range(args.steps):
        optimizer.zero_grad()
        logits = model(images)
        loss = loss_fn(logits, labels)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
