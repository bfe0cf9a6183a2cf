"""PyTorch's CPU time on the workloads of tests/bench/eval_workloads.cpp (opprobe_eval_bench), single-threaded.

    python3 evaluator_torch.py [--min-time SECONDS] WORKLOAD...

WORKLOAD has opprobe_eval_bench's spelling (max_pool2d_with_indices:N,C,H,W, max_pool2d_with_indices_backward:
N,C,H,W, mm:M,K,N, conv2d:N,C,H,W,O). Prints `WORKLOAD IMPL BEST_SECONDS RUNS` per implementation timed:
`aten` is the aten op as PyTorch dispatches it (conv2d and max-pooling run oneDNN / ATen kernels, mm runs
the BLAS that Debian's libblas.so.3 alternative points at), `onednn` (mm only) is oneDNN's GEMM through
PyTorch's mkldnn_linear. Seconds are process CPU time, best of runs repeated until --min-time (default 1 s)
has passed (at most 50). Run by scripts/bench's `evaluator` section.
"""
import argparse
import sys
import time

import torch


def sizes(spec, count):
    kind, _, rest = spec.partition(":")
    try:
        v = [int(x) for x in rest.split(",")]
    except ValueError:
        v = []
    if len(v) != count or any(x < 1 for x in v):
        sys.exit(f"evaluator_torch.py: workload {spec!r}: expected {count} positive sizes")
    return v


def workload(spec):
    """{impl: zero-argument callable} for one workload."""
    g = torch.Generator().manual_seed(1)
    kind = spec.partition(":")[0]
    if kind in ("max_pool2d_with_indices", "max_pool2d_with_indices_backward"):
        n, c, h, w = sizes(spec, 4)
        x = torch.rand(n, c, h, w, generator=g) * 2 - 1
        args = ([3, 3], [2, 2], [1, 1], [1, 1], False)
        out, idx = torch.ops.aten.max_pool2d_with_indices(x, *args)
        if kind == "max_pool2d_with_indices":
            return {"aten": lambda: torch.ops.aten.max_pool2d_with_indices(x, *args)}
        grad = torch.rand(out.shape, generator=g) * 2 - 1
        return {"aten": lambda: torch.ops.aten.max_pool2d_with_indices_backward(grad, x, *args, idx)}
    if kind == "mm":
        m, k, n = sizes(spec, 3)
        a = torch.rand(m, k, generator=g) * 2 - 1
        b = torch.rand(k, n, generator=g) * 2 - 1
        am, btm = a.to_mkldnn(), b.t().contiguous().to_mkldnn()
        return {
            "aten": lambda: torch.mm(a, b),
            "onednn": lambda: torch.ops.aten.mkldnn_linear(am, btm).to_dense(),
        }
    if kind == "conv2d":
        n, c, h, w, o = sizes(spec, 5)
        x = torch.rand(n, c, h, w, generator=g) * 2 - 1
        wt = torch.rand(o, c, 3, 3, generator=g) * 2 - 1
        return {"aten": lambda: torch.nn.functional.conv2d(x, wt, padding=1)}
    sys.exit(f"evaluator_torch.py: workload {spec!r}: unknown kind")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("workloads", nargs="+")
    a = p.parse_args()
    torch.set_num_threads(1)
    with torch.no_grad():
        for spec in a.workloads:
            for impl, fn in workload(spec).items():
                best, total, runs = float("inf"), 0.0, 0
                while runs == 0 or (total < a.min_time and runs < 50):
                    t0 = time.process_time()
                    fn()
                    s = time.process_time() - t0
                    best, total, runs = min(best, s), total + s, runs + 1
                print(f"{spec} {impl} {best:.6f} {runs}", flush=True)


if __name__ == "__main__":
    main()
