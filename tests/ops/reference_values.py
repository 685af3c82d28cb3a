#!/usr/bin/python3
"""Prints the reference values pasted into tests/ops/*_test.cc (Debian's torch 1.13: /usr/bin/python3).

Inputs come from pat(), which the tests reproduce exactly (multiples of 1/16), so only outputs are literals.
Run: /usr/bin/python3 tests/ops/reference_values.py
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=8)


def pat(n, seed, scale=1.0 / 16):
    """v[i] = ((i*37 + seed*11) % 41 - 20) * scale; exact in fp32 (mirrors pat() in ops_test_util.h)."""
    return torch.tensor([((i * 37 + seed * 11) % 41 - 20) * scale for i in range(n)], dtype=torch.float32)


def literal(v):
    s = f"{v:.9g}"
    return (s if any(ch in s for ch in ".e") else s + ".0") + "f"


def emit(name, t):
    """A C++ `const std::vector<float>` definition, wrapped at 118 columns."""
    items = [literal(v) for v in t.detach().reshape(-1).tolist()]
    lines, line = [], "   "
    for it in items:
        if len(line) + len(it) + 2 > 118:
            lines.append(line.rstrip())
            line = "   "
        line += " " + it + ","
    lines.append(line.rstrip(","))
    print(f"// {name}: {list(t.shape)}\nconst std::vector<float> {name} = {{\n" + "\n".join(lines) + "};")


print("// ---- gemm ----")
x = pat(15, 1).reshape(3, 5); w = pat(20, 2).reshape(4, 5); b = pat(4, 3)
emit("kLinear", F.linear(x, w, b))

print("// ---- conv ----")
x = pat(120, 4).reshape(2, 2, 5, 6); w = pat(54, 5).reshape(3, 2, 3, 3); b = pat(3, 6)
emit("kConvGeneral", F.conv2d(x, w, b, stride=2, padding=1))
x = pat(40, 7).reshape(1, 2, 4, 5); w = pat(24, 8).reshape(2, 2, 2, 3)
emit("kConvStridePad", F.conv2d(x, w, None, stride=(1, 2), padding=(0, 1)))
x = pat(90, 9).reshape(1, 3, 5, 6); w = pat(27, 10).reshape(3, 1, 3, 3); b = pat(3, 11)
emit("kConvDepthwise", F.conv2d(x, w, b, stride=2, padding=1, groups=3))
x = pat(40, 12).reshape(1, 2, 4, 5); w = pat(12, 13).reshape(2, 1, 3, 2)
emit("kConvDepthwisePad", F.conv2d(x, w, None, stride=1, padding=(2, 1), groups=2))
x = pat(24, 14).reshape(1, 4, 2, 3); w = pat(12, 15).reshape(3, 4, 1, 1); b = pat(3, 16)
emit("kConvPointwise", F.conv2d(x, w, b))
x = pat(64, 17).reshape(1, 4, 4, 4); w = pat(108, 18).reshape(6, 2, 3, 3); b = pat(6, 19)
emit("kConvGrouped", F.conv2d(x, w, b, stride=1, padding=1, groups=2))

x = pat(36, 20).reshape(2, 6, 3); w = pat(9, 21).reshape(3, 3); b = pat(3, 22)
emit("kDwConv1d", F.conv1d(x.transpose(1, 2), w.unsqueeze(1), b, padding=1, groups=3).transpose(1, 2))
x = pat(10, 23).reshape(1, 5, 2); w = pat(18, 24).reshape(2, 9)
emit("kDwConv1dLongKernel", F.conv1d(x.transpose(1, 2), w.unsqueeze(1), None, padding=4, groups=2).transpose(1, 2))
x = pat(12, 25).reshape(1, 4, 3); w = pat(9, 26).reshape(3, 3)
xp = F.pad(x.transpose(1, 2), (2, 0))  # causal: pad [2, 0]
emit("kDwConv1dCausal", F.conv1d(xp, w.unsqueeze(1), None, groups=3).transpose(1, 2))

print("// ---- norm ----")
x = (pat(21, 27) + 3.0).reshape(3, 7); g = pat(7, 28); be = pat(7, 29)
emit("kLayerNorm", F.layer_norm(x, (7,), g, be, 1e-5))
x = pat(24, 30).reshape(2, 3, 4); m = pat(4, 31); v = pat(4, 32).abs() + 0.5; g = pat(4, 33); be = pat(4, 34)
emit("kBatchNorm", F.batch_norm(x.reshape(-1, 4), m, v, g, be, False, 0.0, 1e-5).reshape(2, 3, 4))

print("// ---- activation ----")
x = pat(37, 35, 0.25)  # [-5, 5]
emit("kSilu", F.silu(x))
x = pat(24, 36, 0.25).reshape(2, 12)
emit("kGlu", F.glu(x, dim=-1))
x = pat(74, 37, 0.25).reshape(2, 37)
emit("kSoftmax", F.softmax(x, dim=-1))
emit("kSoftmaxLarge", F.softmax(torch.tensor([1000.0, 1001.0, 1002.0]), dim=-1))
emit("kSiluExtreme", F.silu(torch.tensor([-100.0, -20.0, -1e-3, 0.0, 1e-3, 20.0, 100.0])))

print("// ---- attention ----")


def rel_pos_attention_formula(q, k, v, pos, u, vb, lengths, left, right):
    """The header's formula, literally: loops over b, h, i, j (float64)."""
    q, k, v, pos, u, vb = (t.double().numpy() for t in (q, k, v, pos, u, vb))
    B, T, D = q.shape
    H, dk = u.shape
    R = (pos.shape[0] - 1) // 2
    out = np.zeros((B, T, D))
    for b in range(B):
        L = lengths[b]
        for h in range(H):
            sl = slice(h * dk, (h + 1) * dk)
            S = np.zeros((T, T))
            M = np.zeros((T, T), dtype=bool)
            for i in range(T):
                for j in range(T):
                    ac = (q[b, i, sl] + u[h]) @ k[b, j, sl]
                    masked = i >= L or j >= L or (left >= 0 and j < i - left) or (right >= 0 and j > i + right)
                    r = R - (i - j)
                    bd = (q[b, i, sl] + vb[h]) @ pos[r, sl] if 0 <= r <= 2 * R else 0.0
                    S[i, j] = -10000.0 if masked else (ac + bd) / math.sqrt(dk)
                    M[i, j] = masked
            P = np.exp(S - S.max(axis=1, keepdims=True))
            P /= P.sum(axis=1, keepdims=True)
            P[M] = 0.0
            out[b, :, sl] = P @ v[b, :, sl]
    return torch.tensor(out, dtype=torch.float32)


def rel_pos_attention_nemo(q, k, v, pos, u, vb, lengths):
    """NeMo's RelPositionMultiHeadAttention maths (rel_shift, -10000 mask), full context, pos [2T-1, D]."""
    B, T, D = q.shape
    H, dk = u.shape
    qh = q.view(B, T, H, dk)
    kh = k.view(B, T, H, dk).transpose(1, 2)
    vh = v.view(B, T, H, dk).transpose(1, 2)
    p = pos.view(1, -1, H, dk).transpose(1, 2)
    q_u = (qh + u).transpose(1, 2)
    q_v = (qh + vb).transpose(1, 2)
    ac = torch.matmul(q_u, kh.transpose(-2, -1))
    bd = torch.matmul(q_v, p.transpose(-2, -1))
    b_, h_, qlen, pos_len = bd.size()  # rel_shift
    bd = F.pad(bd, pad=(1, 0)).view(b_, h_, -1, qlen)[:, :, 1:].view(b_, h_, qlen, pos_len)
    bd = bd[:, :, :, : ac.size(-1)]
    scores = (ac + bd) / math.sqrt(dk)
    pad = torch.arange(T)[None, :] >= torch.tensor(lengths)[:, None]
    mask = (pad[:, :, None] | pad[:, None, :])[:, None]
    scores = scores.masked_fill(mask, -10000.0)
    attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
    return torch.matmul(attn, vh).transpose(1, 2).reshape(B, T, D)


B, T, H, dk = 2, 5, 2, 3
D = H * dk
q = pat(B * T * D, 40, 1 / 8).reshape(B, T, D)
k = pat(B * T * D, 41, 1 / 8).reshape(B, T, D)
v = pat(B * T * D, 42, 1 / 8).reshape(B, T, D)
u = pat(H * dk, 43, 1 / 8).reshape(H, dk)
vb = pat(H * dk, 44, 1 / 8).reshape(H, dk)
pos = pat((2 * T - 1) * D, 45, 1 / 8).reshape(2 * T - 1, D)
lengths = [5, 3]
full = rel_pos_attention_formula(q, k, v, pos, u, vb, lengths, -1, -1)
nemo = rel_pos_attention_nemo(q, k, v, pos, u, vb, lengths)
assert torch.allclose(full, nemo, atol=1e-6), (full - nemo).abs().max()  # the formula is NeMo's maths
emit("kAttnFull", full)
emit("kAttnWindow11", rel_pos_attention_formula(q, k, v, pos, u, vb, lengths, 1, 1))
emit("kAttnWindow20", rel_pos_attention_formula(q, k, v, pos, u, vb, lengths, 2, 0))
pos7 = pat(13 * D, 46, 1 / 8).reshape(13, D)  # R = 6 > T - 1
emit("kAttnWideR", rel_pos_attention_formula(q, k, v, pos7, u, vb, [4, 5], -1, -1))
pos_small = pat(5 * D, 47, 1 / 8).reshape(5, D)  # R = 2 covers window [2, 1]
emit("kAttnWindowSmallR", rel_pos_attention_formula(q, k, v, pos_small, u, vb, [5, 4], 2, 1))

print("// ---- lstm ----")
In, Hd = 3, 2
cell = torch.nn.LSTMCell(In, Hd)
with torch.no_grad():
    cell.weight_ih.copy_(pat(4 * Hd * In, 50, 1 / 16).reshape(4 * Hd, In))
    cell.weight_hh.copy_(pat(4 * Hd * Hd, 51, 1 / 16).reshape(4 * Hd, Hd))
    cell.bias_ih.copy_(pat(4 * Hd, 52, 1 / 8))
    cell.bias_hh.copy_(pat(4 * Hd, 53, 1 / 8))
    x = pat(2 * In, 54, 1 / 8).reshape(2, In)
    h0 = pat(2 * Hd, 55, 1 / 16).reshape(2, Hd)
    c0 = pat(2 * Hd, 56, 1 / 16).reshape(2, Hd)
    h1, c1 = cell(x, (h0, c0))
    emit("kLstmCellH", h1)
    emit("kLstmCellC", c1)
    lstm = torch.nn.LSTM(In, Hd)  # x [T, B, In]
    lstm.weight_ih_l0.copy_(cell.weight_ih); lstm.weight_hh_l0.copy_(cell.weight_hh)
    lstm.bias_ih_l0.copy_(cell.bias_ih); lstm.bias_hh_l0.copy_(cell.bias_hh)
    xs = pat(4 * 2 * In, 57, 1 / 8).reshape(4, 2, In)
    y, (hn, cn) = lstm(xs, (h0[None], c0[None]))
    emit("kLstmLayerY", y)
    emit("kLstmLayerH", hn[0])
    emit("kLstmLayerC", cn[0])
    lstm.bias_ih_l0.zero_(); lstm.bias_hh_l0.zero_()
    y, _ = lstm(xs, (h0[None], c0[None]))
    emit("kLstmLayerNoBiasY", y)
