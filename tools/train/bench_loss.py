#!/usr/bin/env python3
"""Time the TDT loss (forward + backward) on random logits: python3 tools/train/bench_loss.py [--device cuda]
[--B 32 --T 250 --U 80 --V 256] [--dtype float32|bfloat16] [--rec float64|float32]"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tdt_loss import tdt_loss  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--T", type=int, default=250)
    ap.add_argument("--U", type=int, default=80)
    ap.add_argument("--V", type=int, default=256)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rec", default="float64")
    ap.add_argument("--iters", type=int, default=3)
    a = ap.parse_args()
    dev = torch.device(a.device)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(a.B, a.T, a.U + 1, a.V + 1 + 5, generator=g).to(dev, getattr(torch, a.dtype))
    labels = torch.randint(0, a.V, (a.B, a.U), generator=g).to(dev)
    tl = torch.randint(a.T // 2, a.T + 1, (a.B,), generator=g).to(dev)
    ul = torch.randint(a.U // 2, a.U + 1, (a.B,), generator=g).to(dev)
    for i in range(a.iters + 1):
        x = logits.detach().requires_grad_(True)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t = time.time()
        loss = tdt_loss(x, labels, tl, ul, [0, 1, 2, 3, 4], sigma=0.02, dtype=getattr(torch, a.rec))
        loss.backward()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if i:
            print(f"B={a.B} T={a.T} U={a.U} V={a.V} {a.dtype}/{a.rec}: loss {float(loss.detach()):.3f}, "
                  f"fwd+bwd {1000 * (time.time() - t):.0f} ms", flush=True)


if __name__ == "__main__":
    main()
