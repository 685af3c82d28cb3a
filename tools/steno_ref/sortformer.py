"""Sortformer (NeMo's SortformerEncLabelModel, offline path) in PyTorch, with NeMo's state-dict names.

audio -> peak normalisation -> log-mel front end -> FastConformer encoder -> encoder_proj (absent when the
encoder's width already equals the Transformer's) -> post-LN Transformer encoder with a key padding mask ->
ReLU, first_hidden_to_hidden, ReLU, single_hidden_to_spks, sigmoid. See docs/diarization.md.

Peak normalisation: NeMo divides a whole padded batch by (its signed maximum + 1e-3), so a clip's result depends
on its batch. `peak_normalise` here does it per clip, which is what steno serves; `batch_peak=True` reproduces
NeMo's batch-wide factor for the reference's golden files.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model import AudioToMelSpectrogramPreprocessor, ConformerEncoder, _dropout

NEG_INF = -10000.0  # NeMo's form_attention_mask value for padded keys
PEAK_EPS = 1e-3


class MultiHeadAttention(nn.Module):
    """NeMo's transformer_modules.MultiHeadAttention: q and k each divided by dk ** 0.25."""

    def __init__(self, hidden, heads, dropout=0.0):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"num_attention_heads {heads} must divide hidden_size {hidden}")
        self.heads, self.dk = heads, hidden // heads
        self.scale = math.sqrt(math.sqrt(self.dk))
        self.query_net = nn.Linear(hidden, hidden)
        self.key_net = nn.Linear(hidden, hidden)
        self.value_net = nn.Linear(hidden, hidden)
        self.out_projection = nn.Linear(hidden, hidden)
        self.dropout = dropout

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.dk).permute(0, 2, 1, 3)

    def forward(self, x, attn_mask):
        q = self._split(self.query_net(x)) / self.scale
        k = self._split(self.key_net(x)) / self.scale
        v = self._split(self.value_net(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) + attn_mask
        p = _dropout(torch.softmax(scores, dim=-1), self.dropout, self.training)
        ctx = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(x.shape)
        return _dropout(self.out_projection(ctx), self.dropout, self.training)


class PositionWiseFF(nn.Module):
    def __init__(self, hidden, inner, dropout=0.0):
        super().__init__()
        self.dense_in = nn.Linear(hidden, inner)
        self.dense_out = nn.Linear(inner, hidden)
        self.dropout = dropout

    def forward(self, x):
        return _dropout(self.dense_out(torch.relu(self.dense_in(x))), self.dropout, self.training)


class TransformerEncoderBlock(nn.Module):
    """Post-LN: x = LN1(x + MHA(x)); x = LN2(x + FFN(x))."""

    def __init__(self, hidden, inner, heads, dropout=0.0):
        super().__init__()
        self.layer_norm_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.first_sub_layer = MultiHeadAttention(hidden, heads, dropout)
        self.layer_norm_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.second_sub_layer = PositionWiseFF(hidden, inner, dropout)

    def forward(self, x, attn_mask):
        x = self.layer_norm_1(x + self.first_sub_layer(x, attn_mask))
        return self.layer_norm_2(x + self.second_sub_layer(x))


class TransformerEncoder(nn.Module):
    def __init__(self, tcfg):
        super().__init__()
        if tcfg.get("pre_ln", False):
            raise ValueError("transformer_encoder.pre_ln true is not implemented (Sortformer uses post-LN)")
        if tcfg.get("hidden_act", "relu") != "relu":
            raise ValueError("only transformer_encoder.hidden_act relu is implemented")
        drop = float(tcfg.get("dropout", 0.0) or 0.0)
        self.layers = nn.ModuleList(
            TransformerEncoderBlock(int(tcfg["hidden_size"]), int(tcfg["inner_size"]),
                                    int(tcfg["num_attention_heads"]), drop)
            for _ in range(int(tcfg["num_layers"])))

    def forward(self, x, lengths, capture=None):
        valid = torch.arange(x.shape[1], device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        attn_mask = ((~valid).to(x.dtype) * NEG_INF)[:, None, None, :]  # [B, 1, 1, T]: padded keys only
        for k, layer in enumerate(self.layers):
            x = layer(x, attn_mask)
            if capture is not None:
                capture[f"transformer_layer{k}"] = x
        return x


class SortformerModules(nn.Module):
    """NeMo's sortformer_modules: encoder_proj and the speaker head. `hidden_to_spks` is in every NeMo checkpoint
    but unused by inference; it is kept so that state dicts load as they are."""

    def __init__(self, fc_d_model, tf_d_model, num_spks, dropout=0.0):
        super().__init__()
        self.encoder_proj = nn.Linear(fc_d_model, tf_d_model) if fc_d_model != tf_d_model else None
        self.hidden_to_spks = nn.Linear(2 * tf_d_model, num_spks)
        self.first_hidden_to_hidden = nn.Linear(tf_d_model, tf_d_model)
        self.single_hidden_to_spks = nn.Linear(tf_d_model, num_spks)
        self.dropout = dropout

    def speaker_logits(self, x):
        x = self.first_hidden_to_hidden(_dropout(F.relu(x), self.dropout, self.training))
        return self.single_hidden_to_spks(_dropout(F.relu(x), self.dropout, self.training))


class Sortformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        pcfg, ecfg = cfg["preprocessor"], cfg["encoder"]
        tcfg, scfg = cfg["transformer_encoder"], cfg["sortformer_modules"]
        if int(ecfg["feat_in"]) != int(pcfg["features"]):
            raise ValueError("encoder.feat_in != preprocessor.features")
        if int(scfg["tf_d_model"]) != int(tcfg["hidden_size"]):
            raise ValueError("sortformer_modules.tf_d_model != transformer_encoder.hidden_size")
        self.preprocessor = AudioToMelSpectrogramPreprocessor(pcfg)
        self.encoder = ConformerEncoder(ecfg, masked_subsampling=str(pcfg.get("frontend_version", "2.5")) == "2.5")
        self.transformer_encoder = TransformerEncoder(tcfg)
        self.sortformer_modules = SortformerModules(int(ecfg["d_model"]), int(scfg["tf_d_model"]),
                                                    int(scfg["num_spks"]), float(scfg.get("dropout", 0.0) or 0.0))
        self.eval()

    @staticmethod
    def peak_normalise(audio, lengths, batch_peak=False):
        """x * (1 / (max + 1e-3)) with the signed maximum: of each clip's own samples, or (batch_peak) of the
        whole zero-padded batch as NeMo does. Returns (audio, scales [B])."""
        if batch_peak:
            scale = 1.0 / (audio.max() + PEAK_EPS)
            return audio * scale, scale.expand(audio.shape[0])
        scales = torch.stack([1.0 / (audio[i, :int(n)].max() + PEAK_EPS) if n > 0 else torch.tensor(1.0)
                              for i, n in enumerate(lengths)])
        return audio * scales[:, None], scales

    def forward(self, audio, lengths, batch_peak=False, capture=None):
        """audio [B, S] zero-padded, lengths [B] -> (logits [B, T, spk], probabilities, encoder lengths [B])."""
        audio, scales = self.peak_normalise(audio, lengths, batch_peak)
        feats, feat_len = self.preprocessor(audio, lengths)
        feats = feats[:, :, :int(feat_len.max())]
        enc, enc_len = self.encoder(feats, feat_len, capture=capture)
        x = enc.transpose(1, 2)
        if self.sortformer_modules.encoder_proj is not None:
            x = self.sortformer_modules.encoder_proj(x)
        if capture is not None:
            capture.update(peak_scale=scales, features=feats, features_lengths=feat_len, encoded=enc,
                           encoded_lengths=enc_len, encoder_proj=x)
        x = self.transformer_encoder(x, enc_len, capture)
        logits = self.sortformer_modules.speaker_logits(x)
        if capture is not None:
            capture.update(transformer=x, logits=logits)
        return logits, torch.sigmoid(logits), enc_len
