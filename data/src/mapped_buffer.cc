// MappedBuffer and MappedFile over mmap/mremap (Linux).
#include "data/src/mapped_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <corral/error.h>

namespace corral::detail {
namespace {

constexpr std::size_t kPage = 4096;
// First mapping: small sets stay small; later growth doubles, so appends are amortised O(1).
constexpr std::size_t kMinCapacity = 64 * 1024;
constexpr std::size_t kHugePage = 2 * 1024 * 1024;

std::size_t RoundUp(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

[[noreturn]] void ThrowNoMemory(std::size_t bytes, int saved) {
  throw Error(ErrorCode::kIo, "cannot map " + std::to_string(bytes) +
                                  " bytes of memory for a dataset: " + std::strerror(saved));
}

}  // namespace

MappedBuffer::~MappedBuffer() {
  if (data_ != nullptr) munmap(data_, capacity_);
}

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      populated_(std::exchange(other.populated_, 0)) {}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, capacity_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    populated_ = std::exchange(other.populated_, 0);
  }
  return *this;
}

char* MappedBuffer::Extend(std::size_t bytes) {
  const std::size_t old_size = size_;
  Resize(size_ + bytes);
  return data_ + old_size;
}

// `bytes` (a multiple of 2 MiB) of address space starting on a 2 MiB boundary, so that
// transparent huge pages can back all of it; MAP_FAILED when refused.
static void* MapAligned(std::size_t bytes) {
  void* raw = mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return raw;
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > begin) munmap(raw, aligned - begin);
  const std::uintptr_t tail = begin + bytes + kHugePage - (aligned + bytes);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  return reinterpret_cast<void*>(aligned);
}

void MappedBuffer::Resize(std::size_t bytes) {
  if (bytes > capacity_) {
    // Small arrays live in 4 KiB pages; from 2 MiB on, in a 2 MiB-aligned region advised for
    // huge pages. Measured on a VM: filling 10 MiB of fresh 4 KiB pages took 34 ms (a page
    // fault costs ~13 us there), of huge pages 1 ms.
    std::size_t wanted = std::max({bytes, capacity_ * 2, kMinCapacity});
    const bool huge = wanted >= kHugePage;
    wanted = huge ? (wanted + kHugePage - 1) / kHugePage * kHugePage : RoundUp(wanted);
    // MAP_NORESERVE: capacity beyond what is written is address space, not memory.
    void* fresh = huge ? MapAligned(wanted)
                       : mmap(nullptr, wanted, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fresh == MAP_FAILED) ThrowNoMemory(wanted, errno);
    if (huge) madvise(fresh, wanted, MADV_HUGEPAGE);  // advice only: failure changes nothing
    if (data_ != nullptr) {
      // Move the old pages into the start of the new region: page tables move, bytes don't.
      if (mremap(data_, capacity_, capacity_, MREMAP_MAYMOVE | MREMAP_FIXED, fresh) == MAP_FAILED) {
        std::memcpy(fresh, data_, size_);
        munmap(data_, capacity_);
      }
    }
    data_ = static_cast<char*>(fresh);
    capacity_ = wanted;
  }
  if (bytes > populated_ && capacity_ >= kHugePage) {
    // Fault pages in 2 MiB steps with one call instead of one trap per page. At most one
    // step ahead of use, so this costs at most 2 MiB of memory per array; kernels without
    // the advice simply fault as usual. Small arrays skip it: for them the call costs more
    // than the faults.
    const std::size_t end = std::min(capacity_, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    const std::size_t begin = populated_ / kPage * kPage;
#ifdef MADV_POPULATE_WRITE
    madvise(data_ + begin, end - begin, MADV_POPULATE_WRITE);
#endif
    populated_ = end;
  }
  size_ = bytes;
}

MappedFile::MappedFile(const std::string& path, bool populate) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int saved = errno;
    throw Error(ErrorCode::kIo, path + ": cannot open for reading: " + std::strerror(saved));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int saved = S_ISDIR(st.st_mode) ? EISDIR : errno;
    close(fd);
    throw Error(ErrorCode::kIo, path + ": cannot map: " +
                                    (saved != 0 ? std::strerror(saved) : "not a regular file"));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    // MAP_POPULATE: every page is read right away (the checksum does), and mapping them
    // in one call beats one fault per 64 KiB.
    void* mapped =
        mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (mapped == MAP_FAILED) {
      const int saved = errno;
      close(fd);
      throw Error(ErrorCode::kIo, path + ": cannot map: " + std::strerror(saved));
    }
    data_ = static_cast<const char*>(mapped);
  }
  close(fd);
}

void MappedFile::Release(std::size_t begin, std::size_t end) const {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;  // whole pages only: a neighbour's bytes stay
  end = end >= size_ ? size_ : end / page * page;
  if (begin >= end) return;
  // The mapping is read-only and private: nothing is lost, a dropped page is read again from
  // the page cache on its next touch.
  madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

}  // namespace corral::detail
