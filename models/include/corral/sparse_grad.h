// corral::SparseGrad: a sparse gradient written by a model into a buffer its caller owns.
//
// Entry k says: coordinate index[k] has data-gradient grad[k] and, for the regulariser, the
// per-coordinate L2 weight l2[k] (HOGWILD!'s sparse form, see logistic.h). The engine applies
// the step; models never write parameters.
//
// Thread safety: owner-only (each worker has its own, sized once before training, so filling
// it never allocates on the hot path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <corral/error.h>

namespace corral {

class SparseGrad {
 public:
  explicit SparseGrad(std::size_t capacity = 0)
      : index_(capacity), grad_(capacity), l2_(capacity) {}

  void Reserve(std::size_t capacity) {
    if (capacity > index_.size()) {
      index_.resize(capacity);
      grad_.resize(capacity);
      l2_.resize(capacity);
    }
  }
  std::size_t capacity() const { return index_.size(); }

  void Clear() { size_ = 0; }
  // Throws corral::Error (kWorkerFailed) past capacity(): a model that touches more
  // coordinates than its MakeGrad reserved has a bug, and must not write past the buffer in
  // a release build either. The branch is never taken, so it costs nothing measurable.
  void Push(std::uint32_t index, float grad, float l2) {
    if (size_ >= index_.size()) [[unlikely]] {
      ThrowFull();
    }
    index_[size_] = index;
    grad_[size_] = grad;
    l2_[size_] = l2;
    ++size_;
  }

  std::size_t size() const { return size_; }
  std::uint32_t index(std::size_t k) const { return index_[k]; }
  float grad(std::size_t k) const { return grad_[k]; }
  float l2(std::size_t k) const { return l2_[k]; }
  // The data gradients of the entries, writable (a compressor quantizes them in place).
  std::span<float> grads() { return {grad_.data(), size_}; }
  std::span<const float> grads() const { return {grad_.data(), size_}; }

 private:
  [[noreturn]] void ThrowFull() const {
    throw Error(ErrorCode::kWorkerFailed,
                "SparseGrad: more than its capacity of " + std::to_string(index_.size()) +
                    " entries pushed, expected a model to Reserve() the most coordinates a "
                    "step touches");
  }

  std::vector<std::uint32_t> index_;
  std::vector<float> grad_;
  std::vector<float> l2_;
  std::size_t size_ = 0;
};

}  // namespace corral
