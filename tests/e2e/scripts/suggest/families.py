# One unsupported call per rewrite family of `opprobe analyze --suggest` (tests/e2e/suggest_test.cpp): each is refused
# by the backend its test names, and the table has a rewrite that backend accepts. FAMILY selects the calls.
import sys

import torch

torch.manual_seed(0)
family = sys.argv[1]

if family == "f64":
    x = torch.rand(8, dtype=torch.float64)
    y = torch.exp(x)
elif family == "s64":
    a = torch.randint(0, 5, (4, 4))
    b = a @ a
elif family == "c128":
    x = torch.rand(16, dtype=torch.float64)
    y = torch.fft.fft(x)
elif family == "dynamic":
    x = torch.tensor([0.0, 1.5, 0.0, 2.0, 3.0, 0.0])
    idx = torch.nonzero(x)
    sel = torch.masked_select(x, x > 1)
    u = torch.unique(torch.tensor([3, 1, 3, 2, 1]))
elif family == "linalg":
    a = torch.rand(6, 4)
    s = a.T @ a
    q, r = torch.linalg.qr(a)
    w, v = torch.linalg.eigh(s)
    u, sv, vh = torch.linalg.svd(a, full_matrices=False)
elif family == "custom":
    import torchvision
    boxes = torch.tensor([[0., 0., 2., 2.], [0., 0., 2.1, 2.], [5., 5., 6., 6.]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    keep = torchvision.ops.nms(boxes, scores, 0.5)
    best = scores.max()
    lib = torch.library.Library("mylib", "DEF")
    lib.define("my_op(Tensor x) -> Tensor")
    lib.impl("my_op", lambda x: x * 2, "CPU")
    y = torch.ops.mylib.my_op(boxes)
else:
    raise SystemExit(f"unknown family {family}")
