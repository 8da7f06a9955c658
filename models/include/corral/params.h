// corral::Params: the flat float buffer that holds a model's parameters, and the one place
// where Corral's intended data races live.
//
// HOGWILD! (Niu et al. 2011) lets every worker read and write the shared model without locks.
// In C++ an unsynchronised plain access would be a data race and undefined behaviour, so every
// access goes through std::atomic_ref<float> with memory_order_relaxed:
//   W: any worker (Store), R: any worker and the evaluator (Load).
//   relaxed: a coordinate's value carries no other data; lost or torn-between-coordinates
//   updates are exactly the asynchrony HOGWILD!'s analysis allows. Each float is read and
//   written whole (no tearing within a coordinate). No read-modify-write atomics: on x86 a
//   relaxed load/store of a float compiles to a plain mov, so this costs nothing.
// Ordering across epochs (evaluation, snapshots) comes from the engine's own synchronisation.
// The dense kernels move several coordinates per instruction under the same contract
// (models/src/wide_params.h, internal, through ParamsAccess).
//
// Thread safety: thread-safe for Load/Store on any index; the view does not own memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <span>

namespace corral {

namespace detail {
struct ParamsAccess;  // the dense kernels' wide loads and stores (models/src/wide_params.h)
}  // namespace detail

class Params {
 public:
  Params() = default;
  explicit Params(std::span<float> storage) : data_(storage.data()), size_(storage.size()) {}

  std::size_t size() const { return size_; }

  float Load(std::size_t i) const {
    return std::atomic_ref<float>(data_[i]).load(std::memory_order_relaxed);
  }
  float operator[](std::size_t i) const { return Load(i); }
  void Store(std::size_t i, float v) const {
    std::atomic_ref<float>(data_[i]).store(v, std::memory_order_relaxed);
  }

  // Adds `delta` to coordinate i as one atomic read-modify-write (relaxed) and returns the value
  // before: concurrent adds are never lost, unlike Load + Store.
  float FetchAdd(std::size_t i, float delta) const {
    return std::atomic_ref<float>(data_[i]).fetch_add(delta, std::memory_order_relaxed);
  }

  // Asks the cache for coordinate i's line with intent to write: a hint, not an access (no
  // load or store happens, so it is no data race).
  void PrefetchForWrite(std::size_t i) const { __builtin_prefetch(data_ + i, 1, 3); }

  // Copies all coordinates into `out` (same size) with relaxed loads.
  void CopyTo(std::span<float> out) const {
    for (std::size_t i = 0; i < size_; ++i) out[i] = Load(i);
  }

 private:
  friend struct detail::ParamsAccess;
  static_assert(std::atomic_ref<float>::is_always_lock_free,
                "Corral needs lock-free float atomics for HOGWILD! updates");
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace corral
