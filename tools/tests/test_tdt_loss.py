"""tools/train/tdt_loss.py against a brute-force enumeration of every TDT (and RNN-T) alignment.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_tdt_loss.py
"""
import math
import os
import sys
import unittest

import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "train"))

from tdt_loss import TDTLoss, tdt_loss  # noqa: E402


def logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def brute_force_tdt(logits, labels, T, durations, sigma=0.0):
    """-log sum over all alignments, enumerated path by path (NeMo TDT semantics, see tdt_loss.py):
    labels land strictly before T, blanks have duration >= 1, the path ends with a blank landing exactly on T."""
    D = len(durations)
    lg = logits.double()
    tok = torch.log_softmax(lg[..., :-D], -1)
    dur = torch.log_softmax(lg[..., -D:], -1)
    blank = tok.shape[-1] - 1
    U = len(labels)
    paths = []  # collected for a sanity count

    def walk(t, u, score, path):
        total = -math.inf
        for k, d in enumerate(durations):
            if d >= 1 and t + d <= T:  # blank
                s = score + float(tok[t, u, blank]) - sigma + float(dur[t, u, k])
                if t + d == T:
                    if u == U:
                        paths.append(path + [("_", d)])
                        total = logaddexp(total, s)
                else:
                    total = logaddexp(total, walk(t + d, u, s, path + [("_", d)]))
            if u < U and t + d < T:  # label
                s = score + float(tok[t, u, labels[u]]) - sigma + float(dur[t, u, k])
                total = logaddexp(total, walk(t + d, u + 1, s, path + [(labels[u], d)]))
        return total

    return -walk(0, 0, 0.0, []), paths


def brute_force_rnnt(logits, labels, T, num_durations):
    """Standard RNN-T over the token logits: blank moves one frame, a label stays; ends with a blank at T-1."""
    tok = torch.log_softmax(logits.double()[..., :-num_durations], -1)
    blank = tok.shape[-1] - 1
    U = len(labels)

    def walk(t, u):
        total = -math.inf
        if t == T - 1 and u == U:
            total = float(tok[t, u, blank])
        elif t < T - 1:
            total = logaddexp(total, float(tok[t, u, blank]) + walk(t + 1, u))
        if u < U:
            total = logaddexp(total, float(tok[t, u, labels[u]]) + walk(t, u + 1))
        return total

    return -walk(0, 0)


def random_case(gen, B, T, U, V, D, scale=1.5):
    logits = torch.randn(B, T, U + 1, V + 1 + D, generator=gen, dtype=torch.float64) * scale
    labels = torch.randint(0, V, (B, U), generator=gen)
    return logits, labels


class TDTLossTest(unittest.TestCase):
    def test_brute_force_single(self):
        gen = torch.Generator().manual_seed(1)
        cases = 0
        for durations in ([0, 1, 2], [0, 1, 2, 3, 4], [1, 2], [0, 2, 3], [0, 1]):
            for T in range(1, 5):
                for U in range(0, 4):
                    for sigma in (0.0, 0.05):
                        V = 3
                        logits, labels = random_case(gen, 1, T, U, V, len(durations))
                        ref, paths = brute_force_tdt(logits[0], labels[0].tolist(), T, durations, sigma)
                        got = tdt_loss(logits, labels, torch.tensor([T]), torch.tensor([U]), durations, sigma=sigma,
                                       reduction="none")
                        if math.isinf(ref):  # no alignment at all (e.g. durations [0,2,3] with T=1)
                            self.assertGreater(float(got[0]), 1e20)
                            continue
                        cases += 1
                        self.assertAlmostEqual(float(got[0]), ref, delta=1e-5,
                                               msg=f"durations={durations} T={T} U={U} sigma={sigma} "
                                                   f"paths={len(paths)}")
        self.assertGreater(cases, 100)

    def test_path_count_sanity(self):
        # T=2, U=1, durations [0,1,2]: (y,0)(_,2)  (y,0)(_,1)(_,1)  (y,1)(_,1)  (_,1)(y,0)(_,1)
        _, paths = brute_force_tdt(torch.zeros(2, 2, 4 + 3), [0], 2, [0, 1, 2])
        self.assertEqual(len(paths), 4)

    def test_batch_with_different_lengths(self):
        gen = torch.Generator().manual_seed(2)
        durations = [0, 1, 2, 3, 4]
        Ts, Us = [4, 2, 3, 1], [3, 1, 0, 2]
        logits, labels = random_case(gen, 4, max(Ts), max(Us), 3, 5)
        batch = tdt_loss(logits, labels, torch.tensor(Ts), torch.tensor(Us), durations, sigma=0.02,
                         reduction="none")
        for b in range(4):
            single = tdt_loss(logits[b:b + 1, :Ts[b], :Us[b] + 1], labels[b:b + 1, :Us[b]], torch.tensor([Ts[b]]),
                              torch.tensor([Us[b]]), durations, sigma=0.02, reduction="none")
            ref, _ = brute_force_tdt(logits[b], labels[b, :Us[b]].tolist(), Ts[b], durations, 0.02)
            self.assertAlmostEqual(float(batch[b]), float(single[0]), delta=1e-5)
            self.assertAlmostEqual(float(batch[b]), ref, delta=1e-5)
        # the padding (logits past T_b / U_b, labels past U_b) does not matter
        logits2 = logits.clone()
        labels2 = labels.clone()
        for b in range(4):
            logits2[b, Ts[b]:] = 100.0
            logits2[b, :, Us[b] + 1:] = -50.0
            labels2[b, Us[b]:] = 1
        batch2 = tdt_loss(logits2, labels2, torch.tensor(Ts), torch.tensor(Us), durations, sigma=0.02,
                          reduction="none")
        self.assertTrue(torch.allclose(batch, batch2, atol=1e-9))
        # reductions
        lens = torch.tensor(Us, dtype=torch.float64)
        mv = tdt_loss(logits, labels, torch.tensor(Ts), torch.tensor(Us), durations, sigma=0.02)
        self.assertAlmostEqual(float(mv), float(batch.sum() / lens.sum()), delta=1e-5)
        mean = tdt_loss(logits, labels, torch.tensor(Ts), torch.tensor(Us), durations, sigma=0.02, reduction="mean")
        self.assertAlmostEqual(float(mean), float((batch / lens.clamp(min=1)).mean()), delta=1e-5)

    def test_rnnt_branch(self):
        gen = torch.Generator().manual_seed(3)
        for T in range(1, 5):
            for U in range(0, 4):
                logits, labels = random_case(gen, 1, T, U, 3, 5)
                ref = brute_force_rnnt(logits[0], labels[0].tolist(), T, 5)
                got = tdt_loss(logits, labels, torch.tensor([T]), torch.tensor([U]), [0, 1, 2, 3, 4], sigma=0.02,
                               reduction="none", use_rnnt=True)
                self.assertAlmostEqual(float(got[0]), ref, delta=1e-5)
        # omega draws the branch once per call
        loss = TDTLoss([0, 1, 2, 3, 4], sigma=0.0, omega=1.0)
        logits, labels = random_case(gen, 1, 3, 2, 3, 5)
        rnnt = brute_force_rnnt(logits[0], labels[0].tolist(), 3, 5)
        self.assertAlmostEqual(float(loss(logits, labels, torch.tensor([3]), torch.tensor([2]))) * 2, rnnt, delta=1e-5)

    def test_gradcheck(self):
        gen = torch.Generator().manual_seed(4)
        logits, labels = random_case(gen, 2, 3, 2, 3, 3, scale=1.0)
        logits.requires_grad_(True)
        Ts, Us = torch.tensor([3, 2]), torch.tensor([2, 1])

        def f(x):
            return tdt_loss(x, labels, Ts, Us, [0, 1, 2], sigma=0.02, reduction="none")

        self.assertTrue(torch.autograd.gradcheck(f, (logits,), eps=1e-6, atol=1e-6, rtol=1e-5))
        # float32 logits (the training path) give the same gradient to float32 precision
        x32 = logits.detach().float().requires_grad_(True)
        g32, = torch.autograd.grad(f(x32).sum(), x32)
        g64, = torch.autograd.grad(f(logits).sum(), logits)
        self.assertLess(float((g32.double() - g64).abs().max()), 1e-5)
        # and so do bf16 logits up to the bf16 rounding of the logits themselves
        xb = logits.detach().bfloat16().requires_grad_(True)
        gb, = torch.autograd.grad(f(xb).float().sum(), xb)
        self.assertLess(float((gb.double() - g64).abs().max()), 0.05)

    def test_gradient_only_on_valid_region(self):
        gen = torch.Generator().manual_seed(5)
        logits, labels = random_case(gen, 2, 4, 3, 3, 5)
        logits.requires_grad_(True)
        loss = tdt_loss(logits, labels, torch.tensor([4, 2]), torch.tensor([3, 1]), [0, 1, 2, 3, 4], sigma=0.02,
                        reduction="sum")
        g, = torch.autograd.grad(loss, logits)
        self.assertTrue(torch.isfinite(g).all())
        self.assertEqual(float(g[1, 2:].abs().max()), 0.0)
        self.assertEqual(float(g[1, :, 2:].abs().max()), 0.0)
        # each (t,u) cell's token-softmax gradient sums to 0 (log_softmax), so does the duration part
        self.assertLess(float(g[..., :4].sum(-1).abs().max()), 1e-9)
        self.assertLess(float(g[..., 4:].sum(-1).abs().max()), 1e-9)


if __name__ == "__main__":
    unittest.main()
