"""Run the reference on clips the way the nemo-tiny goldens were made: all clips in one zero-padded
batch, then each clip alone. Returns arrays named like the golden files (docs/model-format.md)."""
import numpy as np
import torch

from .decoding import greedy_tdt_batch


@torch.no_grad()
def run_batch(model, clips, capture_layers=False, alignments=False):
    """clips: list of 1-D float32 numpy arrays -> dict of numpy arrays (no prefix) + hyps list."""
    lengths = torch.tensor([len(c) for c in clips], dtype=torch.long)
    audio = torch.zeros(len(clips), int(lengths.max()))
    for i, c in enumerate(clips):
        audio[i, :len(c)] = torch.from_numpy(np.asarray(c, dtype=np.float32))
    feats, feat_len = model.preprocessor(audio, lengths)
    cap = {} if capture_layers else None
    enc, enc_len = model.encoder(feats, feat_len, capture=cap)
    hyps = greedy_tdt_batch(model, enc, enc_len, return_alignments=alignments)
    out = {"input_lengths": lengths.numpy(), "features": feats.numpy(), "features_lengths": feat_len.numpy(),
           "encoded": enc.numpy(), "encoded_lengths": enc_len.numpy()}
    if cap is not None:
        for k, v in cap.items():
            out[k] = v.numpy()
    for i, h in enumerate(hyps):
        for k in ("tokens", "timestamps", "durations", "durations_used"):
            out[f"hyp{i}.{k}"] = np.asarray(h[k], dtype=np.int64)
        if alignments:
            for k in ("align_logits", "align_labels", "align_frames"):
                out[f"hyp{i}.{k}"] = h[k].numpy()
    return out, hyps


def int16_to_float(a):
    return np.asarray(a, dtype=np.int16).astype(np.float32) / 32768.0
