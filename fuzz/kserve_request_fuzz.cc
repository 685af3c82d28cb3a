// libFuzzer target: a KServe v2 inference request body (serve/http/kserve_tensors.h), JSON or the binary tensor
// extension, on any bytes. The first input byte picks the form: even, plain JSON; odd, the binary extension with
// the next two bytes (little-endian) as Inference-Header-Content-Length, so that lengths past the body and 0 (a
// single raw input) are reached too. Parsing must return or throw ServeError or steno::Error; the element-count
// check and prepare_inference (serve/frontend/kserve_model.h: what a transcription or a diarization model accepts)
// must then answer or throw steno::Error. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "serve/frontend/infer_tensors.h"
#include "serve/frontend/kserve_model.h"
#include "serve/http/kserve_tensors.h"
#include "steno/core/error.h"
#include "steno/serve/service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  std::optional<size_t> json_length;
  if (data[0] & 1u) json_length = static_cast<size_t>(data[1]) | static_cast<size_t>(data[2]) << 8;
  const std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);
  try {
    const auto request = steno::serve::http::parse_infer_request(body, json_length);
    for (const auto& t : request.inputs) {
      try {
        steno::serve::check_element_count(t);
      } catch (const steno::Error&) {  // a count that disagrees with the shape is refused
      }
    }
    for (const char* task : {"transcription", "diarization"}) {
      try {
        (void)steno::serve::prepare_inference(request, task);
      } catch (const steno::Error&) {  // a request this model does not accept
      }
    }
  } catch (const steno::serve::ServeError&) {
  } catch (const steno::Error&) {
  }
  return 0;
}
