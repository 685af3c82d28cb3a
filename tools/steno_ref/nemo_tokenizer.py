"""The tokenizer files NeMo keeps beside a SentencePiece model in a .nemo (tools/train/export.py and
tools/nemo/make_nemo.py write them; whisper.cpp's Parakeet converter reads <x>_tokenizer.vocab)."""
import hashlib


def member_hex(data, salt):
    """32 hex digits derived from the data, in the place of the uuid4().hex NeMo prefixes its members with."""
    return hashlib.md5(salt.encode() + data).hexdigest()


def spm_vocab_files(tok_bytes):
    """(<x>_tokenizer.vocab text, <x>_vocab.txt text) as NeMo's tokenizer tooling writes them."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_proto=tok_bytes)
    spm_vocab, vocab_txt = [], []
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        score = sp.get_score(i)
        spm_vocab.append(f"{piece}\t{int(score) if float(score).is_integer() else score}")
        if sp.is_control(i) or sp.is_unknown(i):
            continue
        token = piece[1:] if piece.startswith("\u2581") else "##" + piece
        if token:
            vocab_txt.append(token)
    return "\n".join(spm_vocab) + "\n", "\n".join(vocab_txt) + "\n"


def tokenizer_members(tok_bytes):
    """{"model": name, "spm_vocab": name, "vocab_txt": name} and {name: bytes} of the three tokenizer members."""
    spm_vocab, vocab_txt = spm_vocab_files(tok_bytes)
    names = {"model": member_hex(tok_bytes, "model") + "_tokenizer.model",
             "spm_vocab": member_hex(tok_bytes, "vocab") + "_tokenizer.vocab",
             "vocab_txt": member_hex(tok_bytes, "txt") + "_vocab.txt"}
    data = {names["model"]: tok_bytes, names["spm_vocab"]: spm_vocab.encode("utf-8"),
            names["vocab_txt"]: vocab_txt.encode("utf-8")}
    return names, data
