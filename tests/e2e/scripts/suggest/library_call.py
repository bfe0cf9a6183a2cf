# A call made inside a library (site-packages/fakelinalg): --suggest's Python for it is a torch.library registration
# that puts the rewrite in the call's place (tests/e2e/suggest_test.cpp).
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import fakelinalg  # noqa: E402

q = fakelinalg.orthonormalize(torch.rand(6, 4))  # line 11
