# One SGD training step of torchvision's resnet50 (random weights) on a small batch, on the CPU: the
# model `scripts/bench cache` captures (once, into build/bench/) and analyzes, and `scripts/bench capture`
# times plain and captured. Usage: resnet50_train.py [STEPS]; with STEPS (> 1 for a later step) it runs that
# many steps and prints `opprobe-bench first_step_s=X step_s=Y step_cpu_s=Z` (Y: the fastest step after the first in
# wall time, Z: the least CPU time of this process, all its threads, that a step after the first took).
# With OPPROBE_BENCH_XLA=1 (the torch_xla environment) the same step runs on torch_xla's device and ends with a sync,
# so that torch_xla compiles it as one graph: `scripts/bench batch` saves that graph (XLA_SAVE_TENSORS_FILE) as the
# whole step the probing of its units is set against.
import os
import sys
import time

import torch
import torchvision


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.manual_seed(0)
    try:
        model = torchvision.models.resnet50(weights=None)
    except TypeError:  # torchvision < 0.13 has no `weights` argument
        model = torchvision.models.resnet50(pretrained=False)
    model.train()
    images = torch.rand(2, 3, 64, 64)
    labels = torch.randint(0, 1000, (2,))
    sync = None
    if os.environ.get("OPPROBE_BENCH_XLA") == "1":
        import torch_xla
        device = torch_xla.device()
        model, images, labels = model.to(device), images.to(device), labels.to(device)
        sync = torch_xla.sync
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    times = []
    cpu = []
    for _ in range(steps):
        t0 = time.perf_counter()
        c0 = time.process_time()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        if sync:
            sync()
        cpu.append(time.process_time() - c0)
        times.append(time.perf_counter() - t0)
    if len(sys.argv) > 1:
        print("opprobe-bench first_step_s=%.4f step_s=%.4f step_cpu_s=%.4f"
              % (times[0], min(times[1:] or times), min(cpu[1:] or cpu)))


if __name__ == "__main__":
    main()
