#include "steno/asr/transcript.h"

namespace steno::asr {
namespace {

bool ends_segment(const std::string& word) {
  if (word.empty()) return false;
  const char last = word.back();
  return last == '.' || last == '?' || last == '!';
}

}  // namespace

Transcript build_transcript(const Hypothesis& hyp, const Tokenizer& tok, double frame_seconds) {
  Transcript out;
  out.text = tok.decode(hyp.tokens);

  // Token offsets: [t, t + duration]; punctuation sits at the previous token's end (_refine_timestamps_tdt).
  for (size_t i = 0; i < hyp.tokens.size(); ++i) {
    TokenTiming t{hyp.tokens[i], hyp.timestamps[i], hyp.timestamps[i] + hyp.durations[i]};
    if (tok.is_punctuation(t.id) && i > 0) t.start_frame = t.end_frame = out.tokens.back().end_frame;
    out.tokens.push_back(t);
  }

  // Words: a token whose piece differs from its text (it starts with ▁) opens a word, unless it is punctuation,
  // which joins the word before it.
  struct Building {
    std::vector<std::string> pieces;
    int start = 0, end = 0;
  } cur;
  auto flush = [&] {
    if (cur.pieces.empty()) return;
    out.words.push_back({tok.decode_pieces(cur.pieces), cur.start * frame_seconds, cur.end * frame_seconds});
    cur.pieces.clear();
  };
  for (const TokenTiming& t : out.tokens) {
    const std::string& piece = tok.piece(t.id);
    const bool punct = tok.is_punctuation(t.id);
    const bool starts_word = piece != tok.piece_text(t.id) && !punct;
    if (starts_word) {
      flush();
      cur.start = t.start_frame;
    } else if (punct && cur.pieces.empty() && !out.words.empty()) {
      out.words.back().text += tok.piece_text(t.id);
      out.words.back().end = t.end_frame * frame_seconds;
      continue;
    } else if (cur.pieces.empty()) {
      cur.start = t.start_frame;
    }
    cur.pieces.push_back(piece);
    cur.end = t.end_frame;
  }
  flush();
  // Drop words that decode to nothing (a lone "▁" piece before punctuation, for instance).
  std::erase_if(out.words, [](const TimedText& w) { return w.text.empty(); });

  // Segments close after a word ending in '.', '?' or '!'.
  TimedText seg;
  bool open = false;
  for (const TimedText& w : out.words) {
    if (!open) {
      seg = {w.text, w.start, w.end};
      open = true;
    } else {
      seg.text += " " + w.text;
      seg.end = w.end;
    }
    if (ends_segment(w.text)) {
      out.segments.push_back(seg);
      open = false;
    }
  }
  if (open) out.segments.push_back(seg);
  return out;
}

}  // namespace steno::asr
