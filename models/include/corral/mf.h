// corral::MfModel: matrix factorisation of ratings (HOGWILD!'s Netflix task).
//
// Prediction r(u, i) = mean + b_u + b_i + <p_u, q_i>, with rank-K factors p_u, q_i and biases;
// loss (r - y)^2 / 2; objective = mean loss + (l2/2)|w|^2 over every parameter, in HOGWILD!'s
// sparse form: user u's parameters carry the weight l2*n/d_u (d_u = ratings by u), item i's
// l2*n/d_i, so a rating touches only 2K+2 coordinates. `mean` is the train set's mean rating,
// fixed at construction.
//
// Rows come from a ratings Dataset (see ratings_info.h): column user, column num_users + item.
// Users or items a test set has but the train set had not get no factors or bias: their
// prediction falls back to what is known (the mean and the other side's bias).
//
// Parameters: users first, each as K factors then its bias (u*(K+1) ...), then items alike.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <corral/dataset.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>

namespace corral {

class MfModel {
 public:
  static constexpr Task kTask = Task::kRegression;
  static constexpr std::string_view kName = "mf";
  using Grad = SparseGrad;
  struct Workspace {};

  // For training: `train` must be a ratings set; it supplies the sizes, the mean rating and
  // the per-user and per-item frequencies.
  MfModel(const Dataset& train, int rank, float l2);
  // For evaluation and prediction: plain L2 weights.
  MfModel(std::size_t users, std::size_t items, int rank, float mean, float l2);

  std::size_t NumParams() const { return (users_ + items_) * stride_; }
  std::size_t users() const { return users_; }
  std::size_t items() const { return items_; }
  int rank() const { return rank_; }
  float mean() const { return mean_; }
  float l2() const { return l2_; }

  SparseGrad MakeGrad(const Dataset& /*data*/, std::size_t batch) const {
    return SparseGrad(batch * 2 * stride_);
  }
  Workspace MakeWorkspace(std::size_t /*batch*/) const { return {}; }
  // Factors uniform in +-0.1/sqrt(K)... scaled so <p, q> starts near 0; biases 0.
  void Init(std::span<float> w, Rng& rng) const;

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                SparseGrad& g, Workspace& ws) const;
  EvalSums Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                    std::size_t end) const;
  double Regularizer(std::span<const float> w) const;

  // Predicted rating for dense ids (as in the train set's mapping).
  float Predict(std::span<const float> w, std::size_t user, std::size_t item) const;

 private:
  struct Pair {
    std::size_t user;  // dense id in the row's dataset
    std::size_t item;
  };
  static Pair Decode(const Dataset& data, std::size_t r);
  template <typename W>
  float PredictWith(const W& w, Pair p) const;

  std::size_t users_;
  std::size_t items_;
  int rank_;
  std::size_t stride_;  // rank + 1
  float mean_;
  float l2_;
  std::vector<float> l2_weight_;  // per user, then per item
};

}  // namespace corral
