"""TDT loss (Xu et al. 2023, "Efficient Sequence Transduction by Jointly Predicting Tokens and Durations") in
plain PyTorch, with the semantics of NeMo's TDTLossNumba (compute_tdt_alphas_kernel), autograd for the gradient.

Joint output layout (NeMo): logits [B, T, U+1, V+1+D] = [tokens 0..V-1 | blank = V | D duration logits].
log_softmax is taken separately over the V+1 token logits and over the D duration logits.

Alignment lattice, per utterance with T frames and U labels (alpha(t, u): all of the first u labels emitted and
the next emission happens at frame t):
  - alpha(0, 0) = 0;
  - a label y_{u+1} emitted at (t, u) with duration d in `durations` (0 allowed) goes to (t+d, u+1), only if
    t+d < T;
  - a blank at (t, u) with duration d >= 1 (NeMo: blank never has duration 0 in training) goes to (t+d, u);
  - the utterance ends with a blank of duration d >= 1 emitted at (T-d, U) that lands exactly on frame T.
    (As in NeMo, a label can never be the last emission, and no emission may jump past T.)
  - every emission, blank included, scores log p(token) - sigma + log p(duration) (sigma: NeMo's logit
    under-normalisation, default 0.02 in NeMo's TDT configs).
loss(b) = -log sum over alignments.

`omega`: with probability omega (one draw per call, as NeMo's per-batch random.uniform), the standard RNN-T loss
over the token logits alone (blank advances one frame, labels stay on their frame, no sigma, no duration terms)
is used instead; 0 turns it off.

Reductions (NeMo's names): "mean_volume" = sum(loss) / sum(target lengths) (NeMo's default for transducers,
`rnnt_reduction: mean_volume`); "mean" = mean over the batch of loss / target length; "mean_batch" = mean of loss;
"sum"; "none" = per-utterance losses [B].

Implementation: a loop over t, vectorised over the batch and over u. The arrivals at frame t from earlier frames
(durations >= 1) are one logsumexp; the duration-0 label chain inside frame t is a first-order linear recurrence
along u, solved in closed form with a prefix sum and a logcumsumexp. The recursion runs in float64 by default
(inputs are small: [B, T, U+1] per term) so that the prefix-sum form loses nothing; unreachable states hold a
large finite negative number instead of -inf so that autograd never sees inf - inf.

Memory: the logits tensor [B, T, U+1, V+1+D] and its gradient dominate. `joint_logprobs` reduces it to three
small tensors; train.py can compute it in batch chunks under activation checkpointing (--joint-chunk) so that
the full logits tensor never exists at once.
"""
import random

import torch

NEG = -1.0e30  # "log 0" that stays finite (exp() of it is exactly 0 against any real score)
REDUCTIONS = ("mean_volume", "mean", "mean_batch", "sum", "none")


def joint_logprobs(logits, labels, num_durations):
    """logits [B, T, U+1, V+1+D] -> (lp_blank [B,T,U+1], lp_label [B,T,U], lp_dur [B,T,U+1,D]) in float32
    (float64 if the logits are float64); lp_label[b,t,u] = log p(labels[b,u] | t, u). Blank = index V."""
    B, T, U1, _ = logits.shape
    U = labels.shape[1]
    if U1 != U + 1:
        raise ValueError(f"logits have U+1={U1} but labels have U={U}")
    nv1 = logits.shape[-1] - num_durations
    cdt = torch.float64 if logits.dtype == torch.float64 else torch.float32
    tok = logits[..., :nv1].to(cdt)
    lse = torch.logsumexp(tok, dim=-1)  # [B,T,U+1]
    lp_blank = tok[..., nv1 - 1] - lse
    if U > 0:
        idx = labels.long().clamp(0, nv1 - 1)[:, None, :, None].expand(B, T, U, 1)
        lp_label = tok[:, :, :U].gather(-1, idx).squeeze(-1) - lse[:, :, :U]
    else:
        lp_label = lse.new_zeros(B, T, 0)
    lp_dur = torch.log_softmax(logits[..., nv1:].to(cdt), dim=-1)
    return lp_blank, lp_label, lp_dur


def transducer_loglik(lp_blank, lp_label, lpd_blank, lpd_label, durations, act_lens, label_lens,
                      dtype=torch.float64):
    """log p(labels | x) summed over all alignments of the TDT lattice described in the module docstring.

    lp_blank [B,T,U+1], lp_label [B,T,U] (already including any -sigma), lpd_blank / lpd_label: duration log-probs
    for blank / label emissions, [B,T,U+1,D] or anything that expands to it (e.g. a [D] constant for RNN-T).
    durations: list of D ints (strictly increasing); blank uses only the durations >= 1.
    act_lens [B] (frames, <= T), label_lens [B] (<= U). Returns [B] in `dtype`."""
    B, T, U1 = lp_blank.shape
    U = U1 - 1
    durations = [int(d) for d in durations]
    D = len(durations)
    dev = lp_blank.device
    lp_blank, lp_label = lp_blank.to(dtype), lp_label.to(dtype)
    lpd_blank = lpd_blank.to(dtype).expand(B, T, U1, D)
    lpd_label = lpd_label.to(dtype).expand(B, T, U1, D)
    pos = [k for k, d in enumerate(durations) if d > 0]
    if not pos:
        raise ValueError("durations need at least one value >= 1")
    dpos = [durations[k] for k in pos]
    zero = [k for k, d in enumerate(durations) if d == 0]

    # scores of one emission leaving (t, u): blank with each positive duration, label with each positive duration
    xb = lp_blank.unsqueeze(-1) + lpd_blank[..., pos]  # [B,T,U+1,K]
    xl = lp_label.unsqueeze(-1) + lpd_label[:, :, :U][..., pos]  # [B,T,U,K]

    def arrivals(x):
        # x [B,T,W,K] -> [T,K,B,W] where [t,k] holds x at source frame t - d_k (NEG before frame 0)
        x = x.permute(1, 3, 0, 2)
        out = []
        for k, d in enumerate(dpos):
            xk = x[:, k]
            if d >= T:
                out.append(torch.full_like(xk, NEG))
            else:
                out.append(torch.cat([torch.full_like(xk[:d], NEG), xk[:T - d]], 0))
        return torch.stack(out, 1)

    xb_in = arrivals(xb)  # [T,K,B,U+1]
    xl_in = arrivals(xl)  # [T,K,B,U]
    if zero:  # duration-0 labels: alpha(t,u) = c(t,u) (+) alpha(t,u-1) + w(t,u-1), solved along u per frame
        w = lp_label + lpd_label[:, :, :U, zero[0]]  # [B,T,U]
        wcum = torch.cat([w.new_zeros(B, T, 1), torch.cumsum(w, dim=-1)], dim=-1).transpose(0, 1)  # [T,B,U+1]

    neg_row = lp_blank.new_full((B, U1), NEG)
    neg_col = lp_blank.new_full((len(pos), B, 1), NEG)
    init = neg_row.clone()
    init[:, 0] = 0.0
    alphas = []
    for t in range(T):
        if t == 0:
            c = init
        else:
            a = torch.stack([alphas[t - d] if t >= d else neg_row for d in dpos])  # [K,B,U+1]
            from_blank = a + xb_in[t]
            from_label = torch.cat([neg_col, a[..., :U] + xl_in[t]], dim=-1)
            c = torch.logsumexp(torch.cat([from_blank, from_label], 0), dim=0)  # [B,U+1]
        if zero and U > 0:
            wc = wcum[t]
            c = wc + torch.logcumsumexp(c - wc, dim=-1)
        alphas.append(c)
    alpha = torch.stack(alphas, 1)  # [B,T,U+1]

    # the last emission: blank with duration d >= 1 from (T_b - d, U_b), landing exactly on T_b
    act_lens = act_lens.to(dev).long()
    label_lens = label_lens.to(dev).long()
    bidx = torch.arange(B, device=dev)
    finals = []
    for k, d in zip(pos, dpos):
        ts = act_lens - d
        ok = ts >= 0
        tc = ts.clamp(min=0, max=T - 1)
        v = alpha[bidx, tc, label_lens] + lp_blank[bidx, tc, label_lens] + lpd_blank[bidx, tc, label_lens, k]
        finals.append(torch.where(ok, v, torch.full_like(v, NEG)))
    return torch.logsumexp(torch.stack(finals, 0), dim=0)


def reduce_losses(losses, label_lens, reduction):
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean_batch":
        return losses.mean()
    lens = label_lens.to(losses.device).to(losses.dtype)
    if reduction == "mean":
        return (losses / lens.clamp(min=1)).mean()
    if reduction == "mean_volume":
        return losses.sum() / lens.sum().clamp(min=1)
    raise ValueError(f"reduction must be one of {REDUCTIONS}")


def tdt_loss_from_logprobs(lp_blank, lp_label, lp_dur, act_lens, label_lens, durations, sigma=0.0, omega=0.0,
                           reduction="mean_volume", rng=None, use_rnnt=None, dtype=torch.float64, lattice=None):
    """The loss from joint_logprobs' output (no sigma in it yet). Returns the reduced loss in lp_blank's dtype.
    use_rnnt: force the RNN-T branch (True) or the TDT branch (False); None draws it with probability omega
    from `rng` (a random.Random; the module-level random if None). lattice: a replacement for transducer_loglik
    with its signature (tdt_lattice_cuda.CudaLattice: the lattice as one CUDA kernel)."""
    transducer_loglik_fn = lattice or transducer_loglik
    if use_rnnt is None:
        use_rnnt = omega > 0 and (rng or random).random() < omega
    if use_rnnt:  # NeMo: standard RNN-T alphas over the token log-probs, no sigma, no durations
        dev = lp_blank.device
        lpd_b = torch.tensor([NEG, 0.0], dtype=dtype, device=dev)  # blank: duration 1 only
        lpd_l = torch.tensor([0.0, NEG], dtype=dtype, device=dev)  # label: duration 0 only
        ll = transducer_loglik_fn(lp_blank, lp_label, lpd_b, lpd_l, [0, 1], act_lens, label_lens, dtype)
    else:
        ll = transducer_loglik_fn(lp_blank - sigma, lp_label - sigma, lp_dur, lp_dur, durations, act_lens,
                               label_lens, dtype)
    return reduce_losses(-ll, label_lens, reduction).to(lp_blank.dtype)


def tdt_loss(logits, labels, act_lens, label_lens, durations, sigma=0.0, omega=0.0, reduction="mean_volume",
             rng=None, use_rnnt=None, dtype=torch.float64):
    """TDT loss from the joint output logits [B, T, U+1, V+1+D]; labels [B, U] (padding beyond label_lens
    is ignored), act_lens [B] encoder frames, label_lens [B]."""
    lpb, lpl, lpd = joint_logprobs(logits, labels, len(durations))
    return tdt_loss_from_logprobs(lpb, lpl, lpd, act_lens, label_lens, durations, sigma, omega, reduction, rng,
                                  use_rnnt, dtype)


class TDTLoss(torch.nn.Module):
    """Module wrapper with NeMo's tdt_kwargs names (durations, sigma, omega) and a reduction."""

    def __init__(self, durations, sigma=0.02, omega=0.0, reduction="mean_volume", seed=None):
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}")
        self.durations = [int(d) for d in durations]
        self.sigma, self.omega, self.reduction = float(sigma), float(omega), reduction
        self.rng = random.Random(seed)

    def forward(self, logits, labels, act_lens, label_lens):
        return tdt_loss(logits, labels, act_lens, label_lens, self.durations, self.sigma, self.omega,
                        self.reduction, self.rng)

