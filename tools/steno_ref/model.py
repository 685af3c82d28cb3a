"""FastConformer-TDT in PyTorch, as docs/engine.md describes it, with NeMo's module names.

Attribute names are chosen so that state_dict() keys equal NeMo's exactly
(encoder.layers.K.self_attn.linear_q.weight, decoder.prediction.dec_rnn.lstm.weight_ih_l0,
joint.joint_net.2.weight, preprocessor.featurizer.fb, ...). Only the inference path exists:
dropouts are omitted except where they hold a slot in an nn.Sequential index (joint_net.1).
Training (tools/train) may set the encoder's NeMo dropouts (`dropout`, `dropout_att`, `dropout_pre_encoder`
in the encoder config, all 0 by default); they act only in train() mode, so inference numerics are unchanged.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .frontend import FilterbankFeatures

INF_VAL = 10000.0  # NeMo masks attention scores with -10000, not -inf


def _dropout(x, p, training):
    # identity (the same tensor) at inference: training-only, so reference numerics never change
    return F.dropout(x, p, True) if training and p > 0 else x


class AudioToMelSpectrogramPreprocessor(nn.Module):
    def __init__(self, pcfg):
        super().__init__()
        self.featurizer = FilterbankFeatures(pcfg)

    def forward(self, audio, lengths, fb=None):
        return self.featurizer(audio, lengths, fb)


class ConvSubsampling(nn.Module):
    """dw_striding: conv.0 (full 3x3 s2) ReLU, [conv.2 depthwise s2, conv.3 pointwise, ReLU] x2, out Linear.

    masked=True (frontend 2.5, NeMo's MaskedConvSequential): zero frames >= the current length before
    every layer and after the last; the length is updated after each stride-2 conv. masked=False (2.4):
    plain convs over the whole padded tensor.
    """

    def __init__(self, feat_in, d_model, channels, factor=8):
        super().__init__()
        if factor != 8:
            raise ValueError("only dw_striding with subsampling_factor 8 is implemented")
        c = channels
        self.conv = nn.Sequential(
            nn.Conv2d(1, c, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.Conv2d(c, c, 1), nn.ReLU(),
            nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.Conv2d(c, c, 1), nn.ReLU(),
        )
        f = feat_in
        for _ in range(3):
            f = (f + 2 - 3) // 2 + 1
        self.out = nn.Linear(c * f, d_model)

    @staticmethod
    def _len_after(lengths):
        # calc_length for k=3, s=2, p=1: floor((len + 2 - 3) / 2) + 1 == ceil(len / 2)
        return torch.div(lengths + 2 - 3, 2, rounding_mode="floor") + 1

    def forward(self, x, lengths, masked):
        x = x.unsqueeze(1)  # [B,1,T,F]: conv axes are (time, freq)
        cur = lengths.clone()
        for layer in self.conv:
            if masked:
                x = _mask_time(x, cur)
            x = layer(x)
            if isinstance(layer, nn.Conv2d) and layer.stride != (1, 1):
                cur = self._len_after(cur)
        if masked:
            x = _mask_time(x, cur)
        else:
            for _ in range(3):
                lengths = self._len_after(lengths)
            cur = lengths
        b, c, t, f = x.shape
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))  # flatten index = c*F' + f
        return x, cur


def _mask_time(x, lengths):
    valid = torch.arange(x.shape[2], device=x.device).unsqueeze(0) < lengths.unsqueeze(1)  # [B,T]
    return x * valid[:, None, :, None].to(x.dtype)


def rel_pos_table(length, d_model):
    """pe rows for positions +(length-1) .. -(length-1) (descending), NeMo RelPositionalEncoding.create_pe."""
    positions = torch.arange(length - 1, -length, -1, dtype=torch.float32).unsqueeze(1)
    pe = torch.zeros(positions.size(0), d_model)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(positions * div_term)
    pe[:, 1::2] = torch.cos(positions * div_term)
    return pe.unsqueeze(0)


class RelPositionalEncoding(nn.Module):
    """No parameters (pe is non-persistent in NeMo). Returns x (optionally * sqrt(d)) and pos_emb [1, 2T-1, d]
    where row k is relative position (T-1) - k."""

    def __init__(self, d_model, max_len=5000, xscale=None, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.xscale = xscale
        self.dropout = dropout  # NeMo dropout_pre_encoder, on x only, training only
        self._pe = None

    def forward(self, x):
        T = x.size(1)
        need = max(self.max_len, T)
        if self._pe is None or self._pe.size(1) < 2 * need - 1:
            self._pe = rel_pos_table(need, self.d_model)
        if self._pe.device != x.device:
            self._pe = self._pe.to(x.device)
        if self.xscale:
            x = x * self.xscale
        x = _dropout(x, self.dropout, self.training)
        center = self._pe.size(1) // 2 + 1
        return x, self._pe[:, center - T: center + T - 1]


class RelPositionMultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, use_bias, dropout_att=0.0):
        super().__init__()
        self.dropout_att = dropout_att  # on the attention probabilities, training only
        self.h = n_head
        self.d_k = d_model // n_head
        self.s_d_k = math.sqrt(self.d_k)
        self.linear_q = nn.Linear(d_model, d_model, bias=use_bias)
        self.linear_k = nn.Linear(d_model, d_model, bias=use_bias)
        self.linear_v = nn.Linear(d_model, d_model, bias=use_bias)
        self.linear_out = nn.Linear(d_model, d_model, bias=use_bias)
        self.linear_pos = nn.Linear(d_model, d_model, bias=False)  # never has a bias
        self.pos_bias_u = nn.Parameter(torch.zeros(n_head, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.zeros(n_head, self.d_k))

    @staticmethod
    def rel_shift(x):
        # pad a zero column left, reshape, drop first row: BD[i,j] = BDraw[i, T-1-i+j] (relative position i-j)
        b, h, qlen, pos_len = x.size()
        x = F.pad(x, pad=(1, 0))
        x = x.view(b, h, -1, qlen)
        return x[:, :, 1:].view(b, h, qlen, pos_len)

    def forward(self, x, pos_emb, mask):
        B, T, _ = x.shape
        q = self.linear_q(x).view(B, T, self.h, self.d_k)  # kept [B,T,H,dk] to add the [H,dk] biases
        k = self.linear_k(x).view(B, T, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(B, T, self.h, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
        q_u = (q + self.pos_bias_u).transpose(1, 2)
        q_v = (q + self.pos_bias_v).transpose(1, 2)
        bd = self.rel_shift(torch.matmul(q_v, p.transpose(-2, -1)))
        ac = torch.matmul(q_u, k.transpose(-2, -1))
        bd = bd[:, :, :, :ac.size(-1)]
        scores = (ac + bd) / self.s_d_k
        if mask is not None:
            m = mask.unsqueeze(1)
            scores = scores.masked_fill(m, -INF_VAL)
            attn = torch.softmax(scores, dim=-1).masked_fill(m, 0.0)
        else:
            attn = torch.softmax(scores, dim=-1)
        attn = _dropout(attn, self.dropout_att, self.training)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(B, T, self.h * self.d_k)
        return self.linear_out(out)


class ConformerFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, use_bias, dropout=0.0):
        super().__init__()
        self.dropout = dropout  # between the activation and linear2 (NeMo), training only
        self.linear1 = nn.Linear(d_model, d_ff, bias=use_bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=use_bias)

    def forward(self, x):
        return self.linear2(_dropout(F.silu(self.linear1(x)), self.dropout, self.training))


class ConformerConvolution(nn.Module):
    def __init__(self, d_model, kernel_size, use_bias):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(d_model, 2 * d_model, 1, bias=use_bias)
        # NeMo's CausalConv1D pads [(k-1)/2, (k-1)/2] explicitly; symmetric zero padding is the same maths
        self.depthwise_conv = nn.Conv1d(d_model, d_model, kernel_size, padding=(kernel_size - 1) // 2,
                                        groups=d_model, bias=use_bias)
        self.batch_norm = nn.BatchNorm1d(d_model, eps=1e-5)
        self.pointwise_conv2 = nn.Conv1d(d_model, d_model, 1, bias=use_bias)

    def forward(self, x, pad_mask):
        x = self.pointwise_conv1(x.transpose(1, 2))
        x = F.glu(x, dim=1)  # first half * sigmoid(second half)
        if pad_mask is not None:
            x = x.masked_fill(pad_mask.unsqueeze(1), 0.0)
        x = self.depthwise_conv(x)
        x = self.batch_norm(x)
        x = F.silu(x)
        return self.pointwise_conv2(x).transpose(1, 2)


class ConformerLayer(nn.Module):
    def __init__(self, d_model, d_ff, n_heads, conv_kernel_size, use_bias, dropout=0.0, dropout_att=0.0):
        super().__init__()
        self.fc_factor = 0.5
        self.dropout = dropout  # on each module's output before the residual add (NeMo), training only
        self.norm_feed_forward1 = nn.LayerNorm(d_model)
        self.feed_forward1 = ConformerFeedForward(d_model, d_ff, use_bias, dropout)
        self.norm_conv = nn.LayerNorm(d_model)
        self.conv = ConformerConvolution(d_model, conv_kernel_size, use_bias)
        self.norm_self_att = nn.LayerNorm(d_model)
        self.self_attn = RelPositionMultiHeadAttention(n_heads, d_model, use_bias, dropout_att)
        self.norm_feed_forward2 = nn.LayerNorm(d_model)
        self.feed_forward2 = ConformerFeedForward(d_model, d_ff, use_bias, dropout)
        self.norm_out = nn.LayerNorm(d_model)

    def forward(self, x, pos_emb, att_mask, pad_mask):
        if self.training and self.dropout > 0:
            p = self.dropout
            r = x + self.fc_factor * F.dropout(self.feed_forward1(self.norm_feed_forward1(x)), p, True)
            r = r + F.dropout(self.self_attn(self.norm_self_att(r), pos_emb, att_mask), p, True)
            r = r + F.dropout(self.conv(self.norm_conv(r), pad_mask), p, True)
            r = r + self.fc_factor * F.dropout(self.feed_forward2(self.norm_feed_forward2(r)), p, True)
            return self.norm_out(r)
        r = x + self.fc_factor * self.feed_forward1(self.norm_feed_forward1(x))
        r = r + self.self_attn(self.norm_self_att(r), pos_emb, att_mask)
        r = r + self.conv(self.norm_conv(r), pad_mask)
        r = r + self.fc_factor * self.feed_forward2(self.norm_feed_forward2(r))
        return self.norm_out(r)


class ConformerEncoder(nn.Module):
    def __init__(self, ecfg, masked_subsampling):
        super().__init__()
        d = int(ecfg["d_model"])
        if ecfg.get("subsampling", "dw_striding") != "dw_striding":
            raise ValueError("only dw_striding subsampling is implemented")
        if ecfg.get("conv_norm_type", "batch_norm") != "batch_norm":
            raise ValueError("only conv_norm_type batch_norm is implemented")
        self.att_model = ecfg.get("self_attention_model", "rel_pos")
        if self.att_model not in ("rel_pos", "rel_pos_local_attn"):
            raise ValueError(f"self_attention_model {self.att_model!r} not supported")
        self.att_context = [int(v) for v in ecfg.get("att_context_size", [-1, -1])]
        if self.att_model == "rel_pos_local_attn" and (self.att_context[0] != self.att_context[1]
                                                       or self.att_context[0] < 0):
            raise ValueError("rel_pos_local_attn needs a symmetric window [w, w]")
        self.masked_subsampling = masked_subsampling
        use_bias = bool(ecfg.get("use_bias", True))
        self.pre_encode = ConvSubsampling(int(ecfg["feat_in"]), d, int(ecfg.get("subsampling_conv_channels", 256)),
                                          int(ecfg.get("subsampling_factor", 8)))
        xscale = math.sqrt(d) if ecfg.get("xscaling", True) else None
        self.pos_enc = RelPositionalEncoding(d, int(ecfg.get("pos_emb_max_len", 5000)), xscale,
                                             float(ecfg.get("dropout_pre_encoder", 0.0) or 0.0))
        d_ff = d * int(ecfg.get("ff_expansion_factor", 4))
        drop, drop_att = float(ecfg.get("dropout", 0.0) or 0.0), float(ecfg.get("dropout_att", 0.0) or 0.0)
        self.layers = nn.ModuleList(
            ConformerLayer(d, d_ff, int(ecfg["n_heads"]), int(ecfg.get("conv_kernel_size", 31)), use_bias,
                           drop, drop_att)
            for _ in range(int(ecfg["n_layers"])))

    def _masks(self, lengths, T):
        valid = torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # [B,T]
        att = valid.unsqueeze(1) & valid.unsqueeze(2)  # key and query both valid
        L, R = self.att_context
        # rel_pos with [L,R] keeps j in [i-L, i+R]; rel_pos_local_attn [w,w] (NeMo's Longformer-style
        # sliding chunks) equals banded attention |i-j| <= w with the same rel-pos term, so both use this
        if L >= 0 or R >= 0:
            band = torch.ones(T, T, dtype=torch.bool, device=lengths.device)
            if L >= 0:
                band = band.triu(diagonal=-L)
            if R >= 0:
                band = band.tril(diagonal=R)
            att = att & band.unsqueeze(0)
        return ~valid, ~att

    def forward(self, features, lengths, capture=None):
        """features [B, n_mels, F], lengths [B] -> (encoded [B, d, T], lengths [B]).
        capture: optional dict that receives pre_encode, pos_emb, layerK ([B,T,d])."""
        x, lengths = self.pre_encode(features.transpose(1, 2), lengths, self.masked_subsampling)
        if capture is not None:
            capture["pre_encode"], capture["pre_encode_lengths"] = x, lengths
        x, pos_emb = self.pos_enc(x)
        if capture is not None:
            capture["pos_emb"] = pos_emb
        pad_mask, att_mask = self._masks(lengths, x.size(1))
        for k, layer in enumerate(self.layers):
            x = layer(x, pos_emb, att_mask, pad_mask)
            if capture is not None:
                capture[f"layer{k}"] = x
        return x.transpose(1, 2), lengths


class LSTMDropout(nn.Module):
    """NeMo wraps torch.nn.LSTM in `dec_rnn.lstm`; inter-layer/output dropout is inactive at inference."""

    def __init__(self, hidden, layers):
        super().__init__()
        self.lstm = nn.LSTM(hidden, hidden, num_layers=layers)

    def forward(self, x, state):
        return self.lstm(x, state)


class RNNTDecoder(nn.Module):
    """Prediction net: embed (blank = padding row, zero) -> LSTM. predict() takes labels [B]."""

    def __init__(self, dcfg):
        super().__init__()
        V, H = int(dcfg["vocab_size"]), int(dcfg["pred_hidden"])
        self.blank = V
        self.layers = int(dcfg.get("pred_rnn_layers", 1))
        self.hidden = H
        self.prediction = nn.ModuleDict({"embed": nn.Embedding(V + 1, H, padding_idx=V),
                                         "dec_rnn": LSTMDropout(H, self.layers)})

    def initial_state(self, batch):
        z = torch.zeros(self.layers, batch, self.hidden, device=self.prediction["embed"].weight.device)
        return (z, z.clone())

    def predict(self, labels, state):
        y = self.prediction["embed"](labels).unsqueeze(0)  # [1,B,H]
        g, state = self.prediction["dec_rnn"](y, state)
        return g[0], state  # [B,H]


class RNNTJoint(nn.Module):
    def __init__(self, jcfg, enc_hidden, pred_hidden):
        super().__init__()
        H = int(jcfg["joint_hidden"])
        if jcfg.get("activation", "relu") != "relu":
            raise ValueError("only relu joint activation is implemented")
        self.num_outputs = int(jcfg["num_classes"]) + 1 + int(jcfg.get("num_extra_outputs", 0))
        self.enc = nn.Linear(enc_hidden, H)
        self.pred = nn.Linear(pred_hidden, H)
        # Sequential(ReLU, Dropout, Linear): keeps NeMo's key joint_net.2 (Dropout is identity here)
        self.joint_net = nn.Sequential(nn.ReLU(), nn.Dropout(0.0), nn.Linear(H, self.num_outputs))

    def joint_after_projection(self, f, g, log_softmax=True):
        # NeMo (log_softmax: null) applies log_softmax over the whole vector on CPU; argmaxes are unchanged
        res = self.joint_net(f + g)
        return res.log_softmax(dim=-1) if log_softmax else res


class FastConformerTDT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        pcfg, ecfg = cfg["preprocessor"], cfg["encoder"]
        self.frontend_version = str(pcfg.get("frontend_version", "2.5"))
        if int(ecfg["feat_in"]) != int(pcfg.get("features", 128)):
            raise ValueError("encoder.feat_in != preprocessor.features")
        self.preprocessor = AudioToMelSpectrogramPreprocessor(pcfg)
        self.encoder = ConformerEncoder(ecfg, masked_subsampling=self.frontend_version == "2.5")
        self.decoder = RNNTDecoder(cfg["decoder"])
        self.joint = RNNTJoint(cfg["joint"], int(ecfg["d_model"]), int(cfg["decoder"]["pred_hidden"]))
        self.durations = [int(d) for d in cfg["decoding"]["durations"]]
        self.max_symbols = cfg["decoding"].get("max_symbols", 10)
        if int(cfg["joint"]["num_classes"]) != int(cfg["decoder"]["vocab_size"]):
            raise ValueError("joint.num_classes != decoder.vocab_size")
        if int(cfg["joint"].get("num_extra_outputs", 0)) != len(self.durations):
            raise ValueError("joint.num_extra_outputs != len(decoding.durations): not a TDT model")
        self.eval()
