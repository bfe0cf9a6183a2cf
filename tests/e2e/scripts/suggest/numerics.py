# The numerics of `analyze --suggest`'s rewrites against PyTorch (tests/e2e/suggest_test.cpp): every verified
# suggestion's Python, as the report gives it, is run on test inputs of the call's signature and compared with the
# original PyTorch call, with the conformance suite's tolerances (atol + rtol*|expected|: f32/c64 1e-5/1.3e-4, f64
# 1e-7/1e-7, integers exact). A rewrite that is not PyTorch-exact by design is compared on what it keeps (its
# `changes` says what differs): f64 computed in f32 at f32's tolerance, the static forms on the values they hold,
# the iterative linear algebra on what defines it (Q R = A, the eigenvalues, the singular values).
#
# Usage: python numerics.py REPORT.json  -> one line per suggestion checked; exit 1 on a mismatch.
import json
import math
import sys

import torch

TOL = {torch.float32: (1e-5, 1.3e-4), torch.complex64: (1e-5, 1.3e-4), torch.float64: (1e-7, 1e-7),
       torch.complex128: (1e-7, 1e-7)}
DTYPES = {"f32": torch.float32, "f64": torch.float64, "c64": torch.complex64, "c128": torch.complex128,
          "s64": torch.int64, "s32": torch.int32, "pred": torch.bool}


def close(got, want, dtype=None):
    dtype = dtype or want.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.equal(got.to(want.dtype), want)
    atol, rtol = TOL.get(dtype, (1e-5, 1.3e-4))
    got, want = got.to(want.dtype), want
    return bool(((got - want).abs() <= atol + rtol * want.abs()).all())


def inputs(signature):
    """Test inputs for `f32[4], c64[4]`: well-separated values, as the conformance suite's samples."""
    g = torch.Generator().manual_seed(0)
    out = []
    for part in signature.split(", ") if signature else []:
        t, dims = part.split("[")
        dims = [int(d) for d in dims.rstrip("]").split(",") if d]
        dtype = DTYPES[t]
        if dtype.is_complex:
            real, imag = torch.rand(dims, generator=g) + 0.5, torch.rand(dims, generator=g) - 0.5
            out.append(torch.complex(real, imag).to(dtype))
        elif dtype.is_floating_point:
            out.append((torch.rand(dims, generator=g, dtype=torch.float64) + 0.5).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.rand(dims, generator=g) > 0.5)
        else:
            out.append(torch.randint(0, 5, dims, generator=g, dtype=dtype))
    return out


def run(python, names):
    scope = {"torch": torch, "math": math}
    scope.update(names)
    exec(python, scope)  # noqa: S102 (the report's own suggestion, run on test inputs)
    return scope


def pairs(z):
    return torch.view_as_real(z)


EDITABLE = "# or, where you can edit the call:\n"

REGISTRATION_CHECK = r"""
import sys, torch
registration = sys.stdin.read().replace('"XLA"', '"CPU"')  # this machine's device: the CPU
exec(registration)
a = torch.rand(6, 4, generator=torch.Generator().manual_seed(0)) + 0.5
q, r = torch.linalg.qr(a)  # now the registered rewrite: Gram-Schmidt's R has a positive diagonal, LAPACK's need not
ok = torch.allclose(q @ r, a, atol=1e-5, rtol=1.3e-4) and torch.allclose(q.T @ q, torch.eye(4), atol=1e-5) and \
    bool((torch.diagonal(r) > 0).all())
print("registration", "ok" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
"""


def check_registration(registration):
    """A library call's torch.library registration, run for the CPU in a process of its own, stands in for the call."""
    import subprocess
    r = subprocess.run([sys.executable, "-c", REGISTRATION_CHECK], input=registration, text=True, capture_output=True)
    print(r.stdout.strip() or r.stderr.strip().splitlines()[-1])
    return r.returncode == 0


def check(entry, s):
    kind, rewrite = entry["kind"], s["rewrite"]
    if EDITABLE in s["python"]:  # a call inside a library: its registration, then the form for the user's own code
        registration = s["python"].split(EDITABLE, 1)[0]
        if kind == "aten::linalg_qr" and not check_registration(registration):
            return False
        s = dict(s, python=s["python"].split(EDITABLE, 1)[1])
    args = inputs(entry["signature"])
    if not args:
        return None  # a factory (no tensor argument): nothing to feed it
    names = {n: a for n, a in zip("xyzwuv", args)}
    for n, a in list(names.items()):
        if a.is_complex():
            names[n + "_ri"] = pairs(a)
    if rewrite == "complex-as-real-pairs":
        x, y = args[0], args[1]
        op = {"aten::mul": torch.mul, "aten::add": torch.add, "aten::sub": torch.sub, "aten::div": torch.div}[kind]
        want = op(x, y)
        got = torch.view_as_complex(run(s["python"], names)["out"].contiguous())
        return close(got, want)
    if rewrite == "fft-as-dft-matmul":
        x = args[0]
        scope = run(s["python"], names)
        want = torch.fft.fft(x.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64)) \
            if "fft.fft" in s["python"] else torch.fft.rfft(x)
        return close(torch.view_as_complex(scope["out"].contiguous()), want)
    if rewrite == "c128-fft-as-c64":
        x = args[0]
        got = run(s["python"], names)["out"]
        return got.dtype == torch.complex64 and close(got, torch.fft.fft(x).to(torch.complex64))
    if rewrite == "f64-as-f32":
        x = args[0]
        op = {"aten::exp": torch.exp}.get(kind)
        if op is None:
            return None
        names["x"] = x
        got = run(s["python"], names)["out"]
        return got.dtype == torch.float32 and close(got, op(x).to(torch.float32), torch.float32)
    if rewrite == "s64-as-s32":
        x, y = args[0], args[1]
        got = run(s["python"].replace("out = ", "out = ").replace("(x", "(x.int()").replace(", y", ", y.int()"),
                  names)["out"]
        return close(got, x @ y)
    if rewrite == "static-shape":
        x = args[0]
        if kind == "aten::nonzero":
            x = torch.tensor([0.0, 1.5, 0.0, 2.0, 3.0, 0.0])[: x.numel()].reshape(x.shape)
            names["x"] = x
            idx = run(s["python"], names)["idx"]
            want = torch.nonzero(x)
            return torch.equal(idx[: len(want)], want) and bool((idx[len(want):] == -1).all())
        if kind == "aten::masked_select":
            y = args[1]
            out = run(s["python"], names)["out"]
            return close(out[y], torch.masked_select(x, y)) and bool((out[~y] == 0).all())
        if kind in ("aten::_unique2", "aten::_unique"):
            scope = run(s["python"], names)
            return torch.equal(scope["s"][scope["first"]], torch.unique(x))
    if rewrite == "linalg-plain":
        a = args[0]
        n = a.shape[-1]
        if kind == "aten::linalg_qr":
            scope = run(s["python"], names)
            q, r = scope["Q"], scope["R"]
            eye = torch.eye(n, dtype=a.dtype)
            return close(q @ r, a) and close(q.T @ q, eye) and bool((r.tril(-1).abs() < 1e-5).all())
        if kind in ("aten::_linalg_eigh", "aten::linalg_eigh"):
            # a symmetric matrix with well-separated eigenvalues 1..n
            q, _ = torch.linalg.qr(torch.rand(n, n, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
            sym = (q @ torch.diag(torch.arange(1, n + 1, dtype=torch.float64)) @ q.T).to(a.dtype)
            names["x"] = sym
            scope = run(s["python"], names)
            w, v = scope["w"], scope["V"]
            want = torch.linalg.eigvalsh(sym)
            return close(w, want) and close(sym @ v, v * w)
        if kind in ("aten::_linalg_svd", "aten::linalg_svd"):
            scope = run(s["python"], names)
            want = torch.linalg.svdvals(a.to(torch.float64)).to(a.dtype)
            u, sv, v = scope["U"], scope["S"], scope["V"]
            # through x^T x: the condition number squares, so f32 keeps about half its digits for the smallest values
            return bool(((sv - want).abs() <= 1e-3 * want.abs().max()).all()) and \
                bool(((u * sv) @ v.T - a).abs().max() <= 1e-3 * a.abs().max())
    if rewrite == "cpu-fallback":
        ns = kind.split("::")[0]
        if ns not in ("aten", "prims"):
            try:
                __import__(ns)  # registers its ops (torchvision::nms)
            except ImportError:
                pass
        name = kind.split("::")[1].split(".")[0]
        try:
            getattr(getattr(torch.ops, ns), name)
        except (AttributeError, RuntimeError):
            return None  # an op the user's script defines (torch.library): not in this process
        got = run(s["python"], names)["out"]
        original = s["python"].replace(".cpu()", "").replace(".to(x.device)", "")
        return close(got, run(original, names)["out"])
    return None


def main():
    report = json.load(open(sys.argv[1]))
    failed = checked = 0
    for entry in report["unsupported_operators"]["aten"]:
        if "part_of" in entry:
            continue
        for s in entry.get("suggestions", []):
            if not s["verified"]:
                continue
            ok = check(entry, s)
            if ok is None:
                print(f"not compared: {entry['kind']} {s['rewrite']}")
                continue
            checked += 1
            print(f"{'ok' if ok else 'MISMATCH'}: {entry['kind']} {entry['signature']} {s['rewrite']}")
            failed += not ok
    print(f"{checked} checked, {failed} mismatched")
    sys.exit(1 if failed or not checked else 0)


if __name__ == "__main__":
    main()
