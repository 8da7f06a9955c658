// corral::SoftmaxModel: multinomial logistic regression over K classes, on sparse or dense
// rows.
//
// Parameters: K weights per feature, laid out feature-major (w[u*K + c]) so a sparse row's
// touched coordinates are K-long contiguous runs, then K biases. Objective: (1/n) sum_i s_i c_{y_i}
// cross-entropy_i + (l2/2)|W|^2 (c the class weights of --class-weight, s_i the samples' own
// (Dataset::Weight, --weights), 1 unless given;
// biases unregularised), with HOGWILD!'s sparse L2 form per feature as in
// linear.h: every class weight of feature u carries the weight l2*n/d_u.
//
// Biases: learned by default (dense inputs need them: letter 0.761 test accuracy with, 0.744
// without, 20 epochs). Bias::kNone keeps them at 0, as LIBLINEAR's default (no -B), which is
// what sparse text sets with a shifted class mix want: Industry Sector's split has test/train
// class ratios from 0.12 to 2.09, the unregularised biases learn the train frequencies
// (correlation 0.63 with log class size), and at the optimum they cost 0.1-0.2% test accuracy
// (l2 1e-6: 2980 vs 2985 of 3207 right; issue #4's note has every measurement).
//
// Thread safety: immutable after construction.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <corral/class_map.h>
#include <corral/dataset.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/sparse_grad.h>
#include <corral/training_facts.h>

namespace corral {

class SoftmaxModel {
 public:
  static constexpr Task kTask = Task::kMulticlass;
  static constexpr std::string_view kName = "softmax";
  using Grad = SparseGrad;
  struct Workspace {
    std::vector<float> scores;  // K per batch row
  };

  // For training: classes and feature frequencies from `train`; `class_weight` the factors c
  // of the class ids (classes() order), empty for all 1.
  SoftmaxModel(const Dataset& train, float l2, Bias bias = Bias::kLearned,
               std::span<const float> class_weight = {});
  // The same from the whole set's facts (a run whose ranks hold parts of the set).
  SoftmaxModel(const TrainingFacts& train, float l2, Bias bias = Bias::kLearned,
               std::span<const float> class_weight = {});
  // For evaluation and prediction: plain L2 weights.
  SoftmaxModel(std::size_t num_features, ClassMap classes, float l2, Bias bias = Bias::kLearned);

  std::size_t NumParams() const { return features_ * k_ + k_; }
  std::size_t num_features() const { return features_; }
  const ClassMap& classes() const { return classes_; }
  float l2() const { return l2_; }
  Bias bias() const { return bias_; }
  // The class id of a label (-1: a class the training set never had).
  int ClassId(float label) const { return classes_.Id(label); }
  // A sample's factor c_y on its loss (1 for an unseen class).
  float ClassWeight(float label) const { return WeightOfId(ClassId(label)); }

  SparseGrad MakeGrad(const Dataset& data, std::size_t batch) const {
    return SparseGrad(batch * (data.max_row_nnz() * k_ + k_));
  }
  Workspace MakeWorkspace(std::size_t batch) const { return {std::vector<float>(batch * k_)}; }
  void Init(std::span<float> w, Rng& /*rng*/) const { std::fill(w.begin(), w.end(), 0.0f); }

  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                SparseGrad& g, Workspace& ws) const;
  EvalSums Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                    std::size_t end) const;
  double Regularizer(std::span<const float> w) const;

  // The most probable class's label.
  float Predict(std::span<const float> w, SparseRow x) const;
  // Every class's probability, in classes() order. \pre p.size() == classes().size()
  void Probabilities(std::span<const float> w, SparseRow x, std::span<float> p) const;

 private:
  // scores[c] = b_c + sum_k w[u_k*K + c] x_k; W is Params or a span.
  float WeightOfId(int y) const { return y >= 0 ? class_weight_[static_cast<std::size_t>(y)] : 1.0f; }
  template <typename W>
  void Scores(const W& w, SparseRow x, std::span<float> scores) const;

  std::size_t features_;
  std::size_t k_;
  ClassMap classes_;
  float l2_;
  Bias bias_;
  std::vector<float> l2_weight_;  // per feature
  std::vector<float> class_weight_;  // by class id
};

}  // namespace corral
