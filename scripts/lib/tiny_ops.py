# A loop of tiny aten ops (add, mul and relu on 4-element tensors), where the cost of each call is all
# dispatch: the per-call cost of `opprobe capture` (scripts/bench capture runs it plain and captured).
# Usage: tiny_ops.py [CALLS_PER_LOOP [LOOPS [noop]]]; prints `opprobe-bench us_per_call=X`, the best loop's time per
# call. `noop` runs the loops under a dispatch mode that only calls the op, installed the way the capture installs
# its own (the C++ dispatch mode itself on PyTorch 1.13, the mode stack on 2.x): the least any capture by a Python
# dispatch mode costs, the floor of the capture's Python path (its C++ fast path, docs/capture.md, is below it).
import sys
import time

import torch
from torch.utils import _python_dispatch
from torch.utils._python_dispatch import TorchDispatchMode


def loop(n):
    x = torch.ones(4)
    y = torch.ones(4)
    for _ in range(n // 3):
        z = x + y
        z = z * y
        z = torch.relu(z)
    return z


class _Noop(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func._op(*args, **(kwargs or {}))


class _NoopDirect(object):
    """PyTorch 1.13: the C++ dispatch mode itself, off while the op runs."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        torch._C._set_torch_dispatch_mode(None)
        try:
            return func._op(*args, **(kwargs or {}))
        finally:
            torch._C._set_torch_dispatch_mode(self)


def timed(calls):
    t0 = time.perf_counter()
    loop(calls)
    return time.perf_counter() - t0


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    loops = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    noop = len(sys.argv) > 3 and sys.argv[3] == "noop"
    times = []
    for _ in range(loops):
        if not noop:
            times.append(timed(calls))
        elif hasattr(_python_dispatch, "_TorchDispatchStackMode"):
            mode = _NoopDirect()
            torch._C._set_torch_dispatch_mode(mode)
            try:
                times.append(timed(calls))
            finally:
                torch._C._set_torch_dispatch_mode(None)
        else:
            with _Noop():
                times.append(timed(calls))
    print("opprobe-bench us_per_call=%.3f" % (min(times) / (calls // 3 * 3) * 1e6))


if __name__ == "__main__":
    main()
