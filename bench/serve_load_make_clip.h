// serve_load --make-clip: writes OUT.wav, a 16-bit PCM mono 16 kHz WAV of exactly --clip-seconds of speech: the
// FLAC clips of --testset's audio/ in name order, decoded with steno's audio library, concatenated, repeated as
// needed, cut (the seed workload's clip). Prints what it made as JSON.
#pragma once

#include "serve_load_common.h"

namespace serve_load {

int run_make_clip(const Options& o);

}  // namespace serve_load
