// corral::MfModel: matrix factorisation of ratings (HOGWILD!'s Netflix task).
//
// Prediction r(u, i) = mean + b_u + b_i + <p_u, q_i>, with rank-K factors p_u, q_i and biases;
// loss (r - y)^2 / 2, times the rating's weight (Dataset::Weight); objective = mean loss + (l2/2)|w|^2 over every parameter, in HOGWILD!'s
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
// Biases: learned by default (Koren's baseline predictors; real ratings have user and item
// offsets). Bias::kNone keeps them at 0 and fits mean + <p_u, q_i> only, HOGWILD!'s own Netflix
// objective. On a planted low-rank set (corral data gen ratings: rating = 3 + <u, v> + noise)
// the biases are 15,000 extra free parameters with nothing to fit, and they cost held-out RMSE:
// at the optimum (ALS, l2*n = 1) 0.5541 with biases against 0.5485 without.
//
// Init: factors uniform with the spread that makes Var<p_u, q_i> equal the variance of the
// train ratings around their mean (entries of variance sqrt(var/K)), not a near-zero start.
// Two reasons, both measured on 900k planted ratings: from near zero (a saddle: the gradient of
// <p, q> vanishes there) SGD needs its first ~8 epochs to grow the factors; and the step-size
// search (engine/src/runtime/lr_search.h), which scores one pass from the init on a 10k-rating sample,
// sees none of the curvature |p|^2 + |q|^2 that bounds the stable step once the factors are
// grown, so without biases it picked 0.5 and the run diverged in epoch 1.
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
  MfModel(const Dataset& train, int rank, float l2, Bias bias = Bias::kLearned);
  // For evaluation and prediction: plain L2 weights; Init draws factors as if the ratings'
  // variance were 1.
  MfModel(std::size_t users, std::size_t items, int rank, float mean, float l2,
          Bias bias = Bias::kLearned);

  std::size_t NumParams() const { return (users_ + items_) * stride_; }
  std::size_t users() const { return users_; }
  std::size_t items() const { return items_; }
  int rank() const { return rank_; }
  float mean() const { return mean_; }
  float l2() const { return l2_; }
  Bias bias() const { return bias_; }
  // Half-width of Init's uniform factor entries.
  float init_scale() const { return init_scale_; }

  SparseGrad MakeGrad(const Dataset& /*data*/, std::size_t batch) const {
    return SparseGrad(batch * 2 * stride_);
  }
  Workspace MakeWorkspace(std::size_t /*batch*/) const { return {}; }
  // Factors uniform in +-init_scale() (see the header), biases 0.
  void Init(std::span<float> w, Rng& rng) const;

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                SparseGrad& g, Workspace& ws) const;
  EvalSums Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                    std::size_t end) const;
  double Regularizer(std::span<const float> w) const;

  // Predicted rating for dense ids (as in the train set's mapping).
  float Predict(std::span<const float> w, std::size_t user, std::size_t item) const;
  // Predicted rating of row r of a ratings set (its dense ids). \pre data.ratings() != nullptr
  float PredictRow(std::span<const float> w, const Dataset& data, std::size_t r) const;

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
  Bias bias_;
  float init_scale_;
  std::vector<float> l2_weight_;  // per user, then per item
};

}  // namespace corral
