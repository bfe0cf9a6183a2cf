# A Gaussian-process-style step: the LAPACK-style ops PyTorch dispatches to LAPACK on the CPU, which
# XLA lowers to its cholesky / triangular-solve opcodes and "Qr" / "Eigh" custom calls (LU: a plain-HLO
# while loop). `opprobe analyze --backend rules:neuron-trn1 -- /usr/bin/python3 samples/scripts/linalg.py`
# names each op that a target cannot compile and the line it comes from.
import torch

torch.manual_seed(0)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
k = x @ x.T + 0.5 * torch.eye(8)              # kernel matrix
chol = torch.linalg.cholesky(k)              # cholesky
alpha = torch.cholesky_solve(y, chol)        # two triangular solves
k_inv = torch.linalg.inv(k)                  # LU + triangular solves
q, r = torch.linalg.qr(x)                    # Householder QR
evals = torch.linalg.eigvalsh(k)             # symmetric eigendecomposition
sv = torch.linalg.svdvals(x)                 # singular values
print(float(alpha.sum() + k_inv.trace() + r.diagonal().abs().sum() + evals.sum() + sv.sum()))
