// ByteSource implementations: plain files through read(2), gzip files through zlib's gzread
// (which also handles concatenated members), memory, and std::istream.
#include "data/src/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

namespace corral::detail {
namespace {

std::string ErrnoText(int saved) { return saved != 0 ? std::strerror(saved) : "unknown error"; }

[[noreturn]] void ThrowOpen(const std::string& path, int saved) {
  throw Error(ErrorCode::kIo, path + ": cannot open for reading: " + ErrnoText(saved));
}

class FdSource : public ByteSource {
 public:
  FdSource(const std::string& path, int fd, std::uint64_t size)
      : ByteSource(path), fd_(fd), size_(size) {}
  ~FdSource() override { close(fd_); }
  std::uint64_t SizeHint() const override { return size_; }

 protected:
  std::size_t ReadRaw(char* out, std::size_t n) override {
    while (true) {
      const ssize_t got = read(fd_, out, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) throw SourceError{ErrorCode::kIo, "read failed", ErrnoText(errno)};
    }
  }

 private:
  int fd_;
  std::uint64_t size_;
};

class GzipSource : public ByteSource {
 public:
  GzipSource(const std::string& path, gzFile file) : ByteSource(path), file_(file) {
    gzbuffer(file_, 256 * 1024);  // zlib's 8 KiB default costs ~20% in call overhead
  }
  ~GzipSource() override { gzclose(file_); }
  bool compressed() const override { return true; }

 protected:
  std::size_t ReadRaw(char* out, std::size_t n) override {
    const unsigned want = static_cast<unsigned>(std::min<std::size_t>(n, INT_MAX / 2));
    const int got = gzread(file_, out, want);
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    // A stream cut short first returns its data, then 0 with Z_BUF_ERROR set: that 0 is not
    // the end of a good file.
    if (got > 0 || (got == 0 && code != Z_BUF_ERROR)) return static_cast<std::size_t>(got);
    if (code == Z_ERRNO) throw SourceError{ErrorCode::kIo, "read failed", ErrnoText(errno)};
    // Z_BUF_ERROR: the stream ended early; Z_DATA_ERROR: corrupt deflate data or checksum.
    // zlib prefixes its message with the file's name, "<fd:3>" for a gzdopen'ed file.
    std::string_view text = message != nullptr ? message : "zlib error";
    if (text.starts_with("<fd:")) text.remove_prefix(std::min(text.size(), text.find(": ") + 2));
    throw SourceError{ErrorCode::kBadInput,
                      code == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip stream",
                      std::string(text) + ", expected a complete gzip file"};
  }

 private:
  gzFile file_;
};

class MemoryBytes : public ByteSource {
 public:
  MemoryBytes(std::string_view text, const std::string& name) : ByteSource(name), text_(text) {}
  std::uint64_t SizeHint() const override { return text_.size(); }

 protected:
  std::size_t ReadRaw(char* out, std::size_t n) override {
    const std::size_t count = std::min(n, text_.size() - at_);
    std::memcpy(out, text_.data() + at_, count);
    at_ += count;
    return count;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

class IstreamSource : public ByteSource {
 public:
  IstreamSource(std::istream& in, const std::string& name) : ByteSource(name), in_(in) {}

 protected:
  std::size_t ReadRaw(char* out, std::size_t n) override {
    if (in_.eof()) return 0;
    // Take what the stream has buffered first: when the next refill throws, istream::read
    // forgets the bytes it had already copied, and the line count of the message would lag.
    const std::streamsize buffered = in_.rdbuf()->in_avail();
    if (buffered > 0) n = std::min(n, static_cast<std::size_t>(buffered));
    errno = 0;
    in_.read(out, static_cast<std::streamsize>(n));
    if (in_.bad()) {
      const int saved = errno;
      throw SourceError{ErrorCode::kIo, "read failed", ErrnoText(saved)};
    }
    return static_cast<std::size_t>(in_.gcount());
  }

 private:
  std::istream& in_;
};

}  // namespace

std::size_t ByteSource::Read(char* out, std::size_t n) {
  if (peeked_used_ < peeked_.size()) {
    const std::size_t count = std::min(n, peeked_.size() - peeked_used_);
    std::memcpy(out, peeked_.data() + peeked_used_, count);
    peeked_used_ += count;
    return count;
  }
  if (pending_) {
    SourceError error = std::move(*pending_);
    pending_.reset();
    throw error;
  }
  return ReadRaw(out, n);
}

std::string_view ByteSource::Peek(std::size_t n) {
  // Only called before the first Read, by format detection.
  while (peeked_.size() < n) {
    const std::size_t old = peeked_.size();
    peeked_.resize(n);
    std::size_t got = 0;
    try {
      got = ReadRaw(peeked_.data() + old, n - old);
    } catch (SourceError& e) {
      // Raised by the Read that reaches it, so the reader reports it where it happened.
      pending_ = std::move(e);
    }
    peeked_.resize(old + got);
    if (got == 0) break;
  }
  return std::string_view(peeked_).substr(0, std::min(n, peeked_.size()));
}

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowOpen(path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int saved = errno;
    close(fd);
    ThrowOpen(path, saved);
  }
  // A directory opens fine on Linux and only fails on the first read; say so up front.
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    ThrowOpen(path, EISDIR);
  }
  unsigned char magic[2] = {0, 0};
  const ssize_t got = pread(fd, magic, 2, 0);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile file = gzdopen(fd, "rb");
    if (file == nullptr) {
      close(fd);
      ThrowOpen(path, ENOMEM);
    }
    return std::make_unique<GzipSource>(path, file);
  }
  const std::uint64_t size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  return std::make_unique<FdSource>(path, fd, size);
}

std::unique_ptr<ByteSource> MemorySource(std::string_view text, const std::string& name) {
  return std::make_unique<MemoryBytes>(text, name);
}

std::unique_ptr<ByteSource> StreamSource(std::istream& in, const std::string& name) {
  return std::make_unique<IstreamSource>(in, name);
}

}  // namespace corral::detail
