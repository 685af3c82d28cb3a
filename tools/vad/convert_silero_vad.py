#!/usr/bin/env python3
"""Converts Silero VAD's ONNX model (snakers4/silero-vad, MIT: src/silero_vad/data/silero_vad.onnx, v6.2) into
steno's VAD model directory: model.safetensors under steno's names and shapes, and config.json.

The weights come from the very file that onnxruntime runs for tools/vad/silero_reference.py, so the parity test
compares steno with the model these weights belong to. (The repository's silero_vad_16k.safetensors holds other
weights: only its STFT basis equals the ONNX model's.) Only the 16 kHz branch is taken (the ONNX graph holds an
8 kHz branch too, under an If node).

Python's standard library only: a minimal protobuf reader walks the ONNX graph, subgraphs included, for its
initializers. Offline tooling; the serving path reads the result in C++.

  python3 tools/vad/convert_silero_vad.py silero_vad.onnx models/silero-vad
"""
import argparse
import json
import os
import struct

# ONNX initializer name (after the 16 kHz branch's prefix) -> (steno name, steno shape). Convolutions become
# conv2d kernels over a height of 1 ([Cout, Cin, 1, K]) and the STFT basis a linear layer's weight ([258, 256]),
# the layouts steno's ops take. The LSTM's tensors are PyTorch's (gates i, f, g, o): the ONNX graph reorders
# them for its LSTM node at run time, its initializers keep PyTorch's order.
TENSORS = {
    "stft.forward_basis_buffer": ("stft.basis", [258, 256]),
    "encoder.0.reparam_conv.weight": ("encoder.0.weight", [128, 129, 1, 3]),
    "encoder.0.reparam_conv.bias": ("encoder.0.bias", [128]),
    "encoder.1.reparam_conv.weight": ("encoder.1.weight", [64, 128, 1, 3]),
    "encoder.1.reparam_conv.bias": ("encoder.1.bias", [64]),
    "encoder.2.reparam_conv.weight": ("encoder.2.weight", [64, 64, 1, 3]),
    "encoder.2.reparam_conv.bias": ("encoder.2.bias", [64]),
    "encoder.3.reparam_conv.weight": ("encoder.3.weight", [128, 64, 1, 3]),
    "encoder.3.reparam_conv.bias": ("encoder.3.bias", [128]),
    "decoder.rnn.weight_ih": ("decoder.lstm.weight_ih", [512, 128]),
    "decoder.rnn.weight_hh": ("decoder.lstm.weight_hh", [512, 128]),
    "decoder.rnn.bias_ih": ("decoder.lstm.bias_ih", [512]),
    "decoder.rnn.bias_hh": ("decoder.lstm.bias_hh", [512]),
    "decoder.decoder.2.weight": ("decoder.out.weight", [1, 128]),
    "decoder.decoder.2.bias": ("decoder.out.bias", [1]),
}
BASIS = "stft.forward_basis_buffer"

CONFIG = {
    "model_type": "silero_vad",
    "version": "6.2",
    "source": "https://github.com/snakers4/silero-vad at 806dcba, src/silero_vad/data/silero_vad.onnx (MIT)",
    "sample_rate": 16000,
    "chunk_samples": 512,
    "context_samples": 64,
}


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message: ints for varints, bytes otherwise."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise SystemExit(f"unsupported protobuf wire type {wire}")
        yield num, wire, value


def varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def tensor(buf):
    """TensorProto -> (name, dims, little-endian float32 bytes); only FLOAT tensors are wanted."""
    name, dims, dtype, raw, floats = "", [], 0, None, b""
    for num, wire, v in fields(buf):
        if num == 1:  # dims: packed or not
            if wire == 2:
                j = 0
                while j < len(v):
                    d, j = varint(v, j)
                    dims.append(d)
            else:
                dims.append(v)
        elif num == 2:
            dtype = v
        elif num == 4:  # float_data, packed
            floats += v if wire == 2 else v
        elif num == 8:
            name = v.decode()
        elif num == 9:
            raw = v
    return name, dims, (raw if raw is not None else floats) if dtype == 1 else None


def collect(graph, out):
    """Every FLOAT initializer and Constant of a GraphProto and its subgraphs, by name."""
    for num, _, v in fields(graph):
        if num == 5:  # initializer
            name, dims, data = tensor(v)
            if data is not None:
                out[name] = (dims, data)
        elif num == 1:  # node: Constant tensors and the subgraphs of If/Loop
            outputs = [w.decode() for n, _, w in fields(v) if n == 2]
            for n, _, attr in fields(v):
                if n != 5:
                    continue
                for an, _, av in fields(attr):
                    if an == 5 and outputs:
                        _, dims, data = tensor(av)
                        if data is not None:
                            out[outputs[0]] = (dims, data)
                    elif an == 6:
                        collect(av, out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("onnx", help="silero_vad.onnx")
    p.add_argument("out_dir")
    a = p.parse_args()
    with open(a.onnx, "rb") as f:
        model = f.read()
    found = {}
    for num, _, v in fields(model):
        if num == 7:  # ModelProto.graph
            collect(v, found)
    prefixes = [n[:-len(BASIS)] for n, (dims, _) in found.items() if n.endswith(BASIS) and dims == [258, 1, 256]]
    if len(prefixes) != 1:
        raise SystemExit(f"expected one 16 kHz STFT basis [258, 1, 256] in {a.onnx}, found {len(prefixes)}")
    out = {}
    for name, (steno_name, shape) in TENSORS.items():
        if prefixes[0] + name not in found:
            raise SystemExit(f"{a.onnx} has no {name} in its 16 kHz branch: not a Silero VAD v5/v6 model")
        dims, raw = found[prefixes[0] + name]
        count = 1
        for d in shape:
            count *= d
        if len(raw) != 4 * count:
            raise SystemExit(f"{name}: expected {count} floats, got dims {dims}")
        out[steno_name] = (shape, raw)
    os.makedirs(a.out_dir, exist_ok=True)
    header, offset = {"__metadata__": {"format": "steno-vad", "source": CONFIG["source"]}}, 0
    for name, (shape, raw) in out.items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((-len(blob)) % 8)  # every tensor stays 4-byte aligned
    path = os.path.join(a.out_dir, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, raw in out.values():
            f.write(raw)
    os.replace(path + ".tmp", path)
    with open(os.path.join(a.out_dir, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
