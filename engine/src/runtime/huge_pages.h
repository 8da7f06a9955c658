// HugePageAllocator: memory for the large per-worker arrays a run fills once and reads every
// epoch (the epoch copy of --shuffle epoch, the hot head's split rows), in transparent huge
// pages where the kernel gives them.
//
// Why: the first touch of a fresh page costs a page fault, and on this project's machines
// (VMs) a 4 KiB fault measured ~29 us: 8 MiB first-touched in 58-69 ms, the same 8 MiB in
// advised 2 MiB pages in 0.7 ms. A small run pays that per array: on a9a the hot head's two
// copies of the split rows (3.7 MB each) took 45-60 ms of a 200 ms run's setup. Huge pages
// also spare the gather of the epoch copy a TLB miss per random row. Linux's THP "madvise"
// mode only backs advised ranges, and only whole 2 MiB-aligned pages inside them, so an
// array is given its own 2 MiB-aligned mapping, rounded up to whole huge pages, advised before
// anything touches it.
//
// Arrays under kMinHugeBytes come from operator new as usual: rounding them up would waste
// more than it saves. From kMinHugeBytes up, rounding wastes at most 1.5 MiB an array (at most
// 3x the array at the threshold, less above it) and saves at least 128 faults (~4 ms here):
// a9a's rows split over 2 workers are ~0.9 MB an array. Advice only: where the kernel refuses it (or off Linux) the pages are
// small and nothing else changes. Stateless; thread-safe as operator new.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <vector>

namespace corral::internal {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Arrays of at least this size get huge pages (see above).
inline constexpr std::size_t kMinHugeBytes = std::size_t{512} << 10;

template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator

  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T) - kHugePageBytes) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
#ifdef MADV_HUGEPAGE
    if (bytes >= kMinHugeBytes) {
      // Map one huge page more than needed, keep the 2 MiB-aligned part, return the rest.
      const std::size_t rounded = Rounded(bytes);
      void* raw = mmap(nullptr, rounded + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const auto begin = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t aligned = (begin + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
      if (aligned > begin) munmap(raw, aligned - begin);
      const std::size_t tail = begin + rounded + kHugePageBytes - (aligned + rounded);
      if (tail > 0) munmap(reinterpret_cast<void*>(aligned + rounded), tail);
      madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);
      return reinterpret_cast<T*>(aligned);
    }
#endif
    return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
#ifdef MADV_HUGEPAGE
    if (bytes >= kMinHugeBytes) {
      munmap(p, Rounded(bytes));
      return;
    }
#endif
    ::operator delete(p, std::align_val_t{alignof(T)});
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }

 private:
  static std::size_t Rounded(std::size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
};

// A vector in huge pages (see HugePageAllocator).
template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace corral::internal
