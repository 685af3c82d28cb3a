// What the Sortformer tests that read the prepare_sortformer_tiny fixture's output share: where it puts the
// converted sortformer-tiny models and NeMo's outputs, and how close the engine must come to those outputs.
#pragma once

#include <filesystem>

namespace steno::diar::testdata {

inline const std::filesystem::path kPrepared = std::filesystem::path(STENO_BINARY_DIR) / "testdata";
// Every stage, offline and streaming, relative to the reference's largest value.
inline constexpr double kTolerance = 1e-4;

}  // namespace steno::diar::testdata
