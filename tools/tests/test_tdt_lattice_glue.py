"""tools/train/tdt_lattice_cuda.py's side of the CUDA lattice, on the CPU: the edge scores it builds from the
loss's log-probabilities (blank never with duration 0, no label past the last one, the RNN-T branch's constant
duration scores) and the autograd function that hands the kernel's gradients back. The kernel itself is replaced
by the same edge lattice written as a plain dynamic program (autograd for its gradient); on the GPU machine
`tdt_lattice_cuda.py LIB` checks the real kernel the same way, and train.py does before it uses it.

  /usr/bin/python3 -m unittest discover -s tools/tests -p test_tdt_lattice_glue.py
"""
import os
import random
import sys
import unittest

import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "train"))

import tdt_lattice_cuda  # noqa: E402
from tdt_loss import NEG, tdt_loss_from_logprobs  # noqa: E402


def edge_lattice(blank_score, label_score, act_lens, label_lens, durations):
    """log-likelihood per utterance from edge scores [B,T,U+1,K], the kernel's contract (tdt_lattice.cu)."""
    out = []
    for b in range(blank_score.shape[0]):
        tb, ub = int(act_lens[b]), int(label_lens[b])
        alpha = {}
        for t in range(tb):
            for u in range(ub + 1):
                terms = [blank_score.new_zeros(())] if (t, u) == (0, 0) else []
                for k, d in enumerate(durations):
                    if t - d < 0:
                        continue
                    if d > 0 and (t - d, u) in alpha:
                        terms.append(alpha[(t - d, u)] + blank_score[b, t - d, u, k])
                    if u > 0 and (t - d, u - 1) in alpha:
                        terms.append(alpha[(t - d, u - 1)] + label_score[b, t - d, u - 1, k])
                if terms:
                    alpha[(t, u)] = torch.logsumexp(torch.stack(terms), 0)
        ends = [alpha[(tb - d, ub)] + blank_score[b, tb - d, ub, k] for k, d in enumerate(durations)
                if d > 0 and (tb - d, ub) in alpha]
        out.append(torch.logsumexp(torch.stack(ends), 0) if ends else blank_score.new_tensor(NEG))
    return torch.stack(out)


class DynamicProgramLattice(tdt_lattice_cuda.CudaLattice):
    """CudaLattice with the kernel call replaced by edge_lattice (float64, gradient by autograd)."""

    def __init__(self):  # no library to load
        self.calls = 0

    def run(self, blank_score, label_score, act_lens, label_lens, durations):
        self.calls += 1
        with torch.enable_grad():  # run() is called inside an autograd Function's forward
            bs = blank_score.detach().double().requires_grad_(True)
            ls = label_score.detach().double().requires_grad_(True)
            ll = edge_lattice(bs, ls, act_lens, label_lens, durations)
            ll.sum().backward()
        return ll.float(), bs.grad.float(), ls.grad.float()


class LatticeGlueTest(unittest.TestCase):
    def test_the_self_check_passes_with_a_correct_lattice(self):
        lattice = DynamicProgramLattice()
        self.assertEqual(tdt_lattice_cuda.check(lattice, device="cpu"), [])
        self.assertEqual(lattice.calls, 3)  # TDT, RNN-T, TDT without duration 0

    def test_the_self_check_catches_a_wrong_lattice(self):
        class OffByOneFrame(DynamicProgramLattice):
            def run(self, blank_score, label_score, act_lens, label_lens, durations):
                return super().run(blank_score, label_score, act_lens - 1, label_lens, durations)
        self.assertNotEqual(tdt_lattice_cuda.check(OffByOneFrame(), device="cpu"), [])

    def test_the_loss_and_its_gradient_equal_the_pytorch_lattice(self):
        g = torch.Generator().manual_seed(3)
        B, T, U, durs = 3, 12, 4, [0, 1, 2, 3, 4]
        lpb = torch.log_softmax(torch.randn(B, T, U + 1, 2, generator=g), -1)[..., 0]
        lpl = torch.log_softmax(torch.randn(B, T, U, 3, generator=g), -1)[..., 0]
        lpd = torch.log_softmax(torch.randn(B, T, U + 1, 5, generator=g), -1)
        act, lab = torch.tensor([12, 9, 4]), torch.tensor([4, 2, 1])
        for use_rnnt in (False, True):
            grads = []
            for lattice in (None, DynamicProgramLattice()):
                x = [t.clone().requires_grad_(True) for t in (lpb, lpl, lpd)]
                loss = tdt_loss_from_logprobs(*x, act, lab, durs, sigma=0.02, reduction="mean_volume",
                                              use_rnnt=use_rnnt, rng=random.Random(0), lattice=lattice)
                loss.backward()
                grads.append([loss.detach()] + [t.grad if t.grad is not None else torch.zeros_like(t) for t in x])
            for want, got in zip(*grads):
                self.assertTrue(torch.allclose(got, want, atol=1e-5, rtol=1e-4), (use_rnnt, (got - want).abs().max()))


if __name__ == "__main__":
    unittest.main()
