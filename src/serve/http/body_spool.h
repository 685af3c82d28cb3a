// A request body of any size, held in memory while it is small and in an unnamed temporary file once it is not.
//
// An upload of hours of audio must not live in the server's memory while it arrives: the connection appends the
// body here as it comes, and past `memory_limit` bytes everything so far moves to a file opened with O_TMPFILE (or
// created and unlinked at once where the file system lacks it), so no name is ever left behind: the file goes
// when the spool is destroyed, whether the request was answered, refused, cut off, or the server was killed.
// Once complete, view() shows the whole body as bytes: the memory, or the file mapped read-only, whose pages the
// kernel reads as the parser and the decoder touch them and may drop again (clean page cache, not heap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace steno::serve::http {

class BodySpool {
 public:
  // `dir`: where the temporary file goes ("" = $TMPDIR, else /tmp).
  BodySpool(size_t memory_limit, std::string dir);
  BodySpool() : BodySpool(SIZE_MAX, {}) {}
  explicit BodySpool(std::string bytes);  // a body already in memory (tests, small requests)
  ~BodySpool();
  BodySpool(BodySpool&& other) noexcept;
  BodySpool& operator=(BodySpool&& other) noexcept;
  BodySpool(const BodySpool&) = delete;
  BodySpool& operator=(const BodySpool&) = delete;

  // Appends bytes; throws steno::Error (kUnavailable) when the temporary file cannot be created or written (a
  // full disk): the connection answers 503 and the request goes no further.
  void append(const char* data, size_t n);
  // The body is complete: a file-backed body is mapped for view(). Throws like append().
  void finish();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool in_file() const { return fd_ >= 0; }
  // The first bytes while the body is still arriving (all of it in memory until memory_limit).
  std::string_view memory() const { return memory_; }
  // The whole body, after finish() (or for a spool made from bytes).
  std::string_view view() const;

 private:
  void spill();
  void release() noexcept;

  size_t memory_limit_;
  std::string dir_;
  std::string memory_;
  int fd_ = -1;
  size_t size_ = 0;
  const char* map_ = nullptr;
};

}  // namespace steno::serve::http
