// corral::SparseGrad: a sparse gradient written by a model into a buffer its caller owns.
//
// Entry k says: coordinate index[k] has data-gradient grad[k] and, for the regulariser, the
// per-coordinate L2 weight l2[k] (HOGWILD!'s sparse form, see logistic.h). The engine applies
// the step; models never write parameters.
//
// Thread safety: owner-only (each worker has its own, sized once before training, so filling
// it never allocates on the hot path).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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
  void Push(std::uint32_t index, float grad, float l2) {
    assert(size_ < index_.size() && "SparseGrad: Reserve() the model's max touched coordinates");
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
  std::vector<std::uint32_t> index_;
  std::vector<float> grad_;
  std::vector<float> l2_;
  std::size_t size_ = 0;
};

}  // namespace corral
