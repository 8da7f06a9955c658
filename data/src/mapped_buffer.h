// MappedBuffer: a growable array in anonymous memory that grows with mremap instead of
// copying, and MappedFile: a read-only mapping of a whole file.
//
// Why: a loader appends parsed chunks to arrays whose final size it learns only at the end.
// std::vector's doubling holds the old and the new buffer at once (3x the data at the
// moment of a copy); mremap moves page-table entries, so growing never costs a copy or a
// second buffer, and the finished arrays become the Dataset's storage without another copy.
//
// Thread safety: thread-compatible (one owner appends; readers after it is done).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

namespace corral::detail {

class MappedBuffer {
 public:
  MappedBuffer() = default;
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& other) noexcept;
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  std::size_t size() const { return size_; }  // bytes in use
  char* data() { return data_; }
  const char* data() const { return data_; }

  // Makes room for `bytes` more bytes and returns where they start; size() grows by `bytes`.
  // Throws corral::Error (kIo) when the system refuses memory.
  char* Extend(std::size_t bytes);
  void Resize(std::size_t bytes);

  template <typename T>
  void Append(std::span<const T> items) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (items.empty()) return;
    std::memcpy(Extend(items.size_bytes()), items.data(), items.size_bytes());
  }
  template <typename T>
  void Push(const T& item) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(Extend(sizeof(T)), &item, sizeof(T));
  }
  template <typename T>
  std::span<T> As() {
    return {reinterpret_cast<T*>(data_), size_ / sizeof(T)};
  }
  template <typename T>
  std::span<const T> As() const {
    return {reinterpret_cast<const T*>(data_), size_ / sizeof(T)};
  }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // bytes mapped, a multiple of the page size
  std::size_t populated_ = 0;  // bytes faulted in ahead of use (see Resize)
};

// A whole file mapped read-only (MAP_PRIVATE). Empty files map to an empty span.
class MappedFile {
 public:
  // Throws corral::Error (kIo) naming `path` when it cannot be opened or mapped. `populate`:
  // every page is mapped at once (MAP_POPULATE, for a reader that reads them all); otherwise
  // each page on its first touch.
  explicit MappedFile(const std::string& path, bool populate = true);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const char> bytes() const { return {data_, size_}; }

  // Unmaps the whole pages inside bytes [begin, end) from this process (madvise
  // MADV_DONTNEED): its resident memory drops, the file's pages stay in the page cache and a
  // later read maps them again. Only a hint: a failure is ignored.
  void Release(std::size_t begin, std::size_t end) const;

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace corral::detail
