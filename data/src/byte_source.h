// ByteSource: where a loader's bytes come from (a plain file, a gzip file, memory, a stream),
// behind one Read() so every text format parses all of them the same way.
//
// Thread safety: thread-compatible; the loader's serial input stage is its only reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <corral/error.h>

namespace corral::detail {

// A failed read, without the "name: ... after line N" frame, which the caller adds since
// only it knows how many lines it has seen.
struct SourceError {
  ErrorCode code;
  std::string what;    // e.g. "read failed", "truncated gzip stream"
  std::string detail;  // e.g. strerror text
};

class ByteSource {
 public:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to `n` bytes into `out`; 0 means the end. Throws SourceError.
  std::size_t Read(char* out, std::size_t n);
  // The first `n` bytes (fewer at a short end), which later Reads still return.
  std::string_view Peek(std::size_t n);

  const std::string& name() const { return name_; }
  // Total bytes when known in advance (plain files, memory), else 0.
  virtual std::uint64_t SizeHint() const { return 0; }
  virtual bool compressed() const { return false; }

 protected:
  virtual std::size_t ReadRaw(char* out, std::size_t n) = 0;

 private:
  std::string name_;
  std::string peeked_;
  std::size_t peeked_used_ = 0;
  std::optional<SourceError> pending_;  // a failure met while peeking
};

// Opens `path`, decompressing transparently when it starts with the gzip magic. Throws
// corral::Error (kIo) naming the path when it cannot be opened.
std::unique_ptr<ByteSource> OpenFileSource(const std::string& path);
// Bytes already in memory; `text` must outlive the source.
std::unique_ptr<ByteSource> MemorySource(std::string_view text, const std::string& name);
// A std::istream; `in` must outlive the source.
std::unique_ptr<ByteSource> StreamSource(std::istream& in, const std::string& name);

}  // namespace corral::detail
