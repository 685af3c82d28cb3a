"""Batched greedy TDT decoding, label-looping, as NeMo's GreedyBatchedTDTLabelLoopingComputer.torch_impl
(docs/engine.md, "Greedy TDT decoding"), without CUDA graphs, LM fusion or streaming state.

Every utterance has its own frame index t. Stage 1 runs the joint for all active utterances; stage 2
re-runs it only for those that got blank and are still inside their audio (advance_mask); stage 3 stores
labels found and steps the prediction net (state kept for the others); stage 4 forces t += 1 after
max_symbols tokens on one frame. Alignments record every joint call an utterance takes part in.

NeMo quirk, reproduced on purpose: the duration *recorded* for a batch hypothesis is the `durations`
tensor as it stands after the last stage-2 joint call of that outer iteration, and stage 2 overwrites it
for every row, not just the advancing ones. So when utterance b found its label earlier in the iteration
(e.g. in stage 1) while another utterance still ran stage 2, b records argmax(duration logits) of
joint(enc[min(t_b + d_b, T_b - 1)], same decoder output) instead of d_b. The frame jump itself uses the
right d_b, so tokens and timestamps are unaffected; batch-of-1 runs are never affected. Both are
returned: "durations" (NeMo's record) and "durations_used" (the jump actually taken).
"""
import torch


@torch.no_grad()
def greedy_tdt_batch(model, encoded, enc_lengths, return_alignments=False):
    """encoded [B, d, T], enc_lengths [B] -> list of dicts with tokens, timestamps, durations (NeMo's
    record), durations_used, score (sum of the emitted tokens' log-softmax scores) and optionally
    align_logits/labels/frames."""
    joint, decoder = model.joint, model.decoder
    B = encoded.size(0)
    blank = decoder.blank
    dev = encoded.device
    durations = torch.tensor(model.durations, dtype=torch.long, device=dev)
    nd = len(model.durations)
    max_symbols = model.max_symbols

    enc_proj = joint.enc(encoded.transpose(1, 2))  # [B,T,H], projected once
    lengths = enc_lengths.long()
    bidx = torch.arange(B, device=dev)
    last_timesteps = (lengths - 1).clamp(min=0)
    t = torch.zeros(B, dtype=torch.long, device=dev)
    safe_t = torch.minimum(t, last_timesteps)
    t_cur = torch.zeros(B, dtype=torch.long, device=dev)
    active = t < lengths
    hyps = [dict(tokens=[], timestamps=[], durations=[], durations_used=[], score=0.0) for _ in range(B)]
    aligns = [dict(logits=[], labels=[], frames=[]) for _ in range(B)]
    last_ts = torch.full((B,), -1, dtype=torch.long, device=dev)  # BatchedHyps.last_timestamp
    last_ts_cnt = torch.zeros(B, dtype=torch.long, device=dev)  # BatchedHyps.last_timestamp_lasts

    labels = torch.full((B,), blank, dtype=torch.long, device=dev)  # SOS = blank -> zero embedding
    state = decoder.initial_state(B)
    g, state = decoder.predict(labels, state)
    dec_out = joint.pred(g)

    def record(mask, logits, labs):
        if return_alignments:
            for b in torch.nonzero(mask).flatten().tolist():
                aligns[b]["logits"].append(logits[b].clone())
                aligns[b]["labels"].append(int(labs[b]))
                aligns[b]["frames"].append(int(t_cur[b]))

    while bool(active.any()):
        active_prev = active.clone()
        # stage 1: joint for all utterances
        logits = joint.joint_after_projection(enc_proj[bidx, safe_t], dec_out)
        scores, labels = logits[:, :-nd].max(dim=-1)
        dur = durations[logits[:, -nd:].argmax(dim=-1)]
        blank_mask = labels == blank
        dur = dur.masked_fill((dur == 0) & blank_mask, 1)  # blank never stays on its frame
        t_cur = t.clone()
        record(active, logits, labels)
        dur_used = dur.clone()
        t = t + dur * active
        safe_t = torch.minimum(t, last_timesteps)
        active = t < lengths
        advance = active & blank_mask
        # stage 2: keep looking for a non-blank label for utterances that got blank
        while bool(advance.any()):
            t_cur = torch.where(advance, t, t_cur)
            logits = joint.joint_after_projection(enc_proj[bidx, safe_t], dec_out)
            more_scores, more_labels = logits[:, :-nd].max(dim=-1)
            labels = torch.where(advance, more_labels, labels)
            scores = torch.where(advance, more_scores, scores)
            dur = durations[logits[:, -nd:].argmax(dim=-1)]
            record(advance, logits, more_labels)
            blank_mask = labels == blank
            dur = dur.masked_fill((dur == 0) & blank_mask, 1)  # overwrites all rows: the quirk above
            dur_used = torch.where(advance, dur, dur_used)
            t = torch.where(advance, t + dur, t)
            safe_t = torch.minimum(t, last_timesteps)
            active = t < lengths
            advance = active & blank_mask
        # stage 3: a label found while active is emitted even if its duration ran past the end
        found = active_prev & (labels != blank)
        for b in torch.nonzero(found).flatten().tolist():
            h = hyps[b]
            h["tokens"].append(int(labels[b]))
            h["timestamps"].append(int(t_cur[b]))
            h["durations"].append(int(dur[b]))
            h["durations_used"].append(int(dur_used[b]))
            h["score"] += float(scores[b])
        last_ts_cnt = torch.where(found, torch.where(last_ts == t_cur, last_ts_cnt + 1, torch.ones_like(t)),
                                  last_ts_cnt)
        last_ts = torch.where(found, t_cur, last_ts)
        g_new, state_new = decoder.predict(labels, state)
        dec_new = joint.pred(g_new)
        keep = found.view(1, B, 1)
        state = (torch.where(keep, state_new[0], state[0]), torch.where(keep, state_new[1], state[1]))
        dec_out = torch.where(found.unsqueeze(-1), dec_new, dec_out)
        # stage 4: after max_symbols tokens on one frame (only possible with duration 0), step one frame
        if max_symbols is not None:
            force = active & (labels != blank) & (last_ts_cnt >= max_symbols) & (last_ts == t)
            t = t + force.long()
            safe_t = torch.minimum(t, last_timesteps)
            active = t < lengths

    for b in range(B):
        if return_alignments:
            a = aligns[b]
            nv = joint.num_outputs
            hyps[b]["align_logits"] = torch.stack(a["logits"]) if a["logits"] else torch.zeros(0, nv)
            hyps[b]["align_labels"] = torch.tensor(a["labels"], dtype=torch.long)
            hyps[b]["align_frames"] = torch.tensor(a["frames"], dtype=torch.long)
    return hyps


def decision_margins(align_logits, num_durations):
    """Smallest gap between best and second-best token logit (blank included) and duration logit over steps."""
    if align_logits.numel() == 0:
        return float("inf"), float("inf")
    tok = align_logits[:, :-num_durations].topk(2, dim=-1).values
    dur = align_logits[:, -num_durations:].topk(2, dim=-1).values
    return float((tok[:, 0] - tok[:, 1]).min()), float((dur[:, 0] - dur[:, 1]).min())
