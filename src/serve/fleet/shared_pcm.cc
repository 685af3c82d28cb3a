#include "serve/fleet/shared_pcm.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>

namespace steno::serve::fleet {

SharedPcm SharedPcm::create(const std::vector<std::span<const float>>& clips, std::vector<ClipSpan>* spans) {
  spans->clear();
  uint64_t total = 0;
  for (const auto& c : clips) {
    spans->push_back(ClipSpan{total, c.size(), InjectedFault::kNone});
    total += c.size();
  }
  UniqueFd fd(::memfd_create("steno-batch-pcm", MFD_CLOEXEC));
  if (!fd.valid()) fail(ErrorCode::kUnavailable, "memfd_create for a batch's PCM: {}", std::strerror(errno));
  const size_t bytes = total * sizeof(float);
  if (bytes == 0) return SharedPcm(std::move(fd), nullptr, 0);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    fail(ErrorCode::kResourceExhausted, "cannot size {} bytes of shared memory for a batch: {}", bytes,
         std::strerror(errno));
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED)
    fail(ErrorCode::kResourceExhausted, "cannot map {} bytes of shared memory for a batch: {}", bytes,
         std::strerror(errno));
  SharedPcm pcm(std::move(fd), base, bytes);
  for (size_t i = 0; i < clips.size(); ++i)
    if (!clips[i].empty())
      std::memcpy(static_cast<float*>(base) + (*spans)[i].offset, clips[i].data(), clips[i].size_bytes());
  return pcm;
}

SharedPcm SharedPcm::map(UniqueFd fd, const std::vector<ClipSpan>& spans) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw ProtocolError(fmt::format("fstat of the batch's PCM: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode) || st.st_size < 0) throw ProtocolError("the batch's PCM is not a memory file");
  const auto bytes = static_cast<uint64_t>(st.st_size);
  const uint64_t floats = bytes / sizeof(float);
  for (const ClipSpan& s : spans)
    if (s.offset > floats || s.samples > floats - s.offset)
      throw ProtocolError(
          fmt::format("a clip at {} of {} samples lies outside the batch's {} samples", s.offset, s.samples, floats));
  if (bytes == 0) return SharedPcm(std::move(fd), nullptr, 0);
  void* base = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED)
    fail(ErrorCode::kResourceExhausted, "cannot map the batch's {} bytes of PCM: {}", bytes, std::strerror(errno));
  return SharedPcm(std::move(fd), base, bytes);
}

SharedPcm::SharedPcm(SharedPcm&& o) noexcept
    : fd_(std::move(o.fd_)), base_(std::exchange(o.base_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

SharedPcm::~SharedPcm() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

std::span<const float> SharedPcm::clip(const ClipSpan& s) const {
  if (s.samples == 0) return {};
  return {static_cast<const float*>(base_) + s.offset, static_cast<size_t>(s.samples)};
}

}  // namespace steno::serve::fleet
