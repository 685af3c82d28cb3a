#!/usr/bin/env python3
"""The TDT lattice on the GPU in one kernel (tools/train/tdt_lattice.cu), as a drop-in for tdt_loss.py's
transducer_loglik: same arguments, same result, gradients by the kernel instead of autograd through a loop.

  lattice = load("/tmp/tdt_lattice/libsteno_tdt_lattice.so")   # None where it cannot run (no CUDA, no library)
  tdt_loss_from_logprobs(..., lattice=lattice)

  python3 tools/train/tdt_lattice_cuda.py LIB [--bench]   # checks the kernel against the PyTorch lattice
                                                            # (TDT and RNN-T branches); exit 1 on a mismatch

The kernel works in float32 (the PyTorch lattice in float64); the check's tolerances say how close that is.
"""
import argparse
import ctypes
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tdt_loss import NEG, transducer_loglik  # noqa: E402


class CudaLattice:
    """Callable with transducer_loglik's signature (minus dtype), backed by the shared library."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        f = self.lib.steno_tdt_lattice
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4 + [ctypes.POINTER(ctypes.c_int)] + \
            [ctypes.c_void_p] * 5 + [ctypes.c_void_p]
        self.lib.steno_tdt_lattice_error.restype = ctypes.c_char_p
        self.lib.steno_tdt_lattice_error.argtypes = [ctypes.c_int]
        self.path = path

    def __call__(self, lp_blank, lp_label, lpd_blank, lpd_label, durations, act_lens, label_lens, dtype=None):
        B, T, U1 = lp_blank.shape
        D = len(durations)
        f32 = torch.float32
        # Edge scores [B,T,U+1,D]: blank never has duration 0; label_score[..., u, :] is label u+1 at (t, u), and
        # u = U (no label left) is "no edge".
        blank_score = lp_blank.to(f32).unsqueeze(-1) + lpd_blank.to(f32).expand(B, T, U1, D)
        zero = [k for k, d in enumerate(durations) if int(d) == 0]
        if zero:
            blank_score = blank_score.index_fill(-1, torch.tensor(zero, device=lp_blank.device), NEG)
        lab = torch.cat([lp_label.to(f32), lp_label.new_full((B, T, 1), NEG, dtype=f32)], dim=-1)
        label_score = lab.unsqueeze(-1) + lpd_label.to(f32).expand(B, T, U1, D)
        ll = _LatticeFn.apply(blank_score, label_score, act_lens, label_lens, tuple(int(d) for d in durations), self)
        return ll if dtype is None else ll.to(dtype)

    def run(self, blank_score, label_score, act_lens, label_lens, durations):
        B, T, U1, K = blank_score.shape
        dev = blank_score.device
        bs, ls = blank_score.contiguous(), label_score.contiguous()
        al = act_lens.to(dev, torch.int32).contiguous()
        ul = label_lens.to(dev, torch.int32).contiguous()
        alpha = torch.empty(B, T, U1, device=dev, dtype=torch.float32)
        beta = torch.empty_like(alpha)
        ll = torch.empty(B, device=dev, dtype=torch.float32)
        gb, gl = torch.zeros_like(bs), torch.zeros_like(ls)
        durs = (ctypes.c_int * K)(*durations)
        stream = torch.cuda.current_stream(dev).cuda_stream
        with torch.cuda.device(dev):
            rc = self.lib.steno_tdt_lattice(bs.data_ptr(), ls.data_ptr(), al.data_ptr(), ul.data_ptr(), B, T, U1, K,
                                            durs, alpha.data_ptr(), beta.data_ptr(), ll.data_ptr(), gb.data_ptr(),
                                            gl.data_ptr(), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"steno_tdt_lattice: {self.lib.steno_tdt_lattice_error(rc).decode()}")
        return ll, gb, gl


class _LatticeFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, blank_score, label_score, act_lens, label_lens, durations, lattice):
        ll, gb, gl = lattice.run(blank_score, label_score, act_lens, label_lens, durations)
        ctx.save_for_backward(gb, gl)
        return ll

    @staticmethod
    def backward(ctx, grad_ll):
        gb, gl = ctx.saved_tensors
        g = grad_ll.to(gb.dtype).view(-1, 1, 1, 1)
        return gb * g, gl * g, None, None, None, None


def load(path):
    """The lattice, or None (with the reason on stderr) where it cannot run here."""
    if not torch.cuda.is_available():
        return None
    if not path or not os.path.exists(path):
        print(f"tdt_lattice_cuda: no library at {path!r}; the PyTorch lattice is used", file=sys.stderr)
        return None
    return CudaLattice(path)


def check(lattice, device="cuda", seed=0):
    """Kernel vs the float64 PyTorch lattice on random scores, both branches; returns a list of failures."""
    g = torch.Generator().manual_seed(seed)
    failures = []
    B, T, U = 6, 37, 9
    cases = [("tdt", [0, 1, 2, 3, 4]), ("rnnt", [0, 1]), ("tdt-no-zero", [1, 2, 4])]
    for name, durs in cases:
        D = len(durs)
        lpb = torch.log_softmax(torch.randn(B, T, U + 1, 2, generator=g, dtype=torch.float64), -1)[..., 0]
        lpl = torch.log_softmax(torch.randn(B, T, U, 3, generator=g, dtype=torch.float64), -1)[..., 0]
        lpd = torch.log_softmax(torch.randn(B, T, U + 1, D, generator=g, dtype=torch.float64), -1)
        if name == "rnnt":  # as tdt_loss_from_logprobs' RNN-T branch: constant duration scores
            lpd_b = torch.tensor([NEG, 0.0], dtype=torch.float64)
            lpd_l = torch.tensor([0.0, NEG], dtype=torch.float64)
        else:
            lpd_b = lpd_l = lpd
        act = torch.tensor([T, T - 1, 20, 5, 1, 30])
        lab = torch.tensor([U, 3, U, 2, 0, 0])
        ref_in = [x.clone().requires_grad_(True) for x in (lpb, lpl)]
        ref = transducer_loglik(ref_in[0], ref_in[1], lpd_b, lpd_l, durs, act, lab)
        ref.sum().backward()
        dev_in = [x.to(device, torch.float32).requires_grad_(True) for x in (lpb, lpl)]
        got = lattice(dev_in[0], dev_in[1], lpd_b.to(device), lpd_l.to(device), durs, act.to(device),
                      lab.to(device))
        got.sum().backward()
        checks = [("loglik", got.detach().cpu().double(), ref.detach()),
                  ("d/d lp_blank", dev_in[0].grad.cpu().double(), ref_in[0].grad),
                  ("d/d lp_label", dev_in[1].grad.cpu().double(), ref_in[1].grad)]
        for what, a, b in checks:
            err = (a - b).abs().max().item()
            tol = 1e-3 if what == "loglik" else 1e-4
            print(f"{name:12s} {what:13s} max |kernel - pytorch| = {err:.2e} (tolerance {tol:.0e})")
            if not err <= tol:
                failures.append(f"{name} {what}: {err:.3e}")
    return failures


def bench(lattice, device="cuda", B=32, T=250, U=80, iters=5):
    """Forward + backward of the lattice alone, kernel vs PyTorch (float64 recursion), on one batch shape."""
    g = torch.Generator().manual_seed(1)
    durs = [0, 1, 2, 3, 4]
    lpb = torch.log_softmax(torch.randn(B, T, U + 1, 2, generator=g), -1)[..., 0].to(device)
    lpl = torch.log_softmax(torch.randn(B, T, U, 3, generator=g), -1)[..., 0].to(device)
    lpd = torch.log_softmax(torch.randn(B, T, U + 1, 5, generator=g), -1).to(device)
    act = torch.full((B,), T, device=device)
    lab = torch.full((B,), U, device=device)
    for name, fn in (("kernel", lattice), ("pytorch", transducer_loglik)):
        times = []
        for _ in range(iters):
            a, b = lpb.clone().requires_grad_(True), lpl.clone().requires_grad_(True)
            torch.cuda.synchronize()
            t0 = time.time()
            fn(a, b, lpd, lpd, durs, act, lab).sum().backward()
            torch.cuda.synchronize()
            times.append(time.time() - t0)
        print(f"lattice {name:8s} B={B} T={T} U={U}: {min(times) * 1e3:.2f} ms forward + backward (best of {iters})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib")
    ap.add_argument("--bench", action="store_true")
    a = ap.parse_args()
    lattice = load(a.lib)
    if lattice is None:
        sys.exit("tdt_lattice_cuda: cannot run here (no CUDA device or no library)")
    failures = check(lattice)
    if a.bench:
        bench(lattice)
    if failures:
        sys.exit("tdt_lattice_cuda: MISMATCH " + "; ".join(failures))
    print("tdt_lattice_cuda: kernel matches the PyTorch lattice")


if __name__ == "__main__":
    main()
