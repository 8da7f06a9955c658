#include <corral/softmax.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <corral/error.h>

#include "models/src/class_weights.h"
#include "models/src/model_size.h"
#include "models/src/sparse_l2.h"

namespace corral {
namespace {

// Softmax in place over `scores`; returns log(sum exp(scores)).
double SoftmaxInPlace(std::span<float> scores) {
  const float top = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (float& s : scores) {
    s = std::exp(s - top);
    sum += s;
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (float& s : scores) s *= inv;
  return top + std::log(sum);
}

void CheckConfig(const ClassMap& classes, float l2) {
  if (!std::isfinite(l2) || l2 < 0) {
    throw Error(ErrorCode::kBadConfig, "softmax: l2 must be a finite number >= 0");
  }
  if (classes.size() < 2) {
    throw Error(ErrorCode::kBadInput, "softmax: the training set needs at least 2 classes, has " +
                                          std::to_string(classes.size()));
  }
}

// num_features, once the (num_features + 1) x K parameters are known to fit the SparseGrad's
// uint32 indices and memory.
std::size_t CheckedFeatures(std::size_t num_features, std::size_t k) {
  internal::CheckedNumParams((static_cast<double>(num_features) + 1) * static_cast<double>(k),
                             "softmax: " + std::to_string(num_features) + " features and " +
                                 std::to_string(k) + " classes",
                             internal::GradIndex::kUint32);
  return num_features;
}

}  // namespace

SoftmaxModel::SoftmaxModel(std::size_t num_features, ClassMap classes, float l2, Bias bias)
    : features_(num_features),
      k_(classes.size()),
      classes_(std::move(classes)),
      l2_(l2),
      bias_(bias),
      l2_weight_(CheckedFeatures(num_features, k_), l2),
      class_weight_(k_, 1.0f) {
  CheckConfig(classes_, l2);
}

SoftmaxModel::SoftmaxModel(const Dataset& train, float l2, Bias bias,
                           std::span<const float> class_weight)
    : SoftmaxModel(train.num_features(), ClassMap::Of(train), l2, bias) {
  l2_weight_ = internal::SparseL2Weights(train, l2);
  if (class_weight.empty()) return;
  internal::CheckClassWeights(kName, class_weight, k_);
  class_weight_.assign(class_weight.begin(), class_weight.end());
}

SoftmaxModel::SoftmaxModel(const TrainingFacts& train, float l2, Bias bias,
                           std::span<const float> class_weight)
    : SoftmaxModel(train.num_features, train.classes, l2, bias) {
  l2_weight_ = internal::SparseL2Weights(train.rows_with, train.rows, l2);
  if (class_weight.empty()) return;
  internal::CheckClassWeights(kName, class_weight, k_);
  class_weight_.assign(class_weight.begin(), class_weight.end());
}

template <typename W>
void SoftmaxModel::Scores(const W& w, SparseRow x, std::span<float> scores) const {
  const std::size_t bias = features_ * k_;
  for (std::size_t c = 0; c < k_; ++c) scores[c] = w[bias + c];
  for (std::size_t j = 0; j < x.nnz(); ++j) {
    const std::size_t u = x.index[j];
    if (u >= features_) continue;  // a test set may reach beyond the train set's dimension
    const float v = x.value[j];
    const std::size_t base = u * k_;
    for (std::size_t c = 0; c < k_; ++c) scores[c] += w[base + c] * v;
  }
}

void SoftmaxModel::Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                            SparseGrad& g, Workspace& ws) const {
  g.Clear();
  const float scale = 1.0f / static_cast<float>(rows.size());
  const std::span<float> p(ws.scores.data(), k_);
  const std::size_t bias = features_ * k_;
  for (const std::uint32_t r : rows) {
    const SparseRow x = data.Row(r);
    Scores(w, x, p);
    SoftmaxInPlace(p);
    // d(cross-entropy)/d(score_c) = p_c - [c == y]; an unseen class has no target.
    const int y = classes_.Id(data.Label(r));
    if (y >= 0) p[static_cast<std::size_t>(y)] -= 1.0f;
    const float weight = scale * WeightOfId(y) * data.Weight(r);
    for (std::size_t c = 0; c < k_; ++c) p[c] *= weight;
    for (std::size_t j = 0; j < x.nnz(); ++j) {
      const std::size_t u = x.index[j];
      if (u >= features_) continue;
      const float v = x.value[j];
      const float reg = l2_weight_[u] * scale;
      const auto base = static_cast<std::uint32_t>(u * k_);
      for (std::size_t c = 0; c < k_; ++c) {
        g.Push(base + static_cast<std::uint32_t>(c), p[c] * v, reg);
      }
    }
    if (bias_ == Bias::kNone) continue;  // the biases stay at their initial 0
    for (std::size_t c = 0; c < k_; ++c) {
      g.Push(static_cast<std::uint32_t>(bias + c), p[c], 0.0f);
    }
  }
}

EvalSums SoftmaxModel::Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                                std::size_t end) const {
  EvalSums s;
  std::vector<float> scores(k_);
  for (std::size_t r = begin; r < end; ++r) {
    Scores(w, data.Row(r), std::span(scores));
    const auto best = static_cast<int>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    const float top = scores[static_cast<std::size_t>(best)];
    double sum = 0;
    for (const float v : scores) sum += std::exp(double{v} - top);
    const double log_z = top + std::log(sum);
    const int y = classes_.Id(data.Label(r));
    // A class the training set never had: scored as if its score were the lowest one.
    const double target = y >= 0 ? scores[static_cast<std::size_t>(y)]
                                 : *std::min_element(scores.begin(), scores.end());
    s.loss += (log_z - target) * WeightOfId(y) * data.Weight(r);
    s.correct += best == y ? 1.0 : 0.0;
  }
  s.rows += static_cast<double>(end - begin);
  return s;
}

double SoftmaxModel::Regularizer(std::span<const float> w) const {
  double sum = 0;
  for (std::size_t i = 0; i < features_ * k_; ++i) sum += double{w[i]} * w[i];
  return 0.5 * l2_ * sum;
}

float SoftmaxModel::Predict(std::span<const float> w, SparseRow x) const {
  std::vector<float> scores(k_);
  Scores(w, x, std::span(scores));
  return classes_.Label(static_cast<std::size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin()));
}

void SoftmaxModel::Probabilities(std::span<const float> w, SparseRow x, std::span<float> p) const {
  Scores(w, x, p);
  SoftmaxInPlace(p);
}

static_assert(Model<SoftmaxModel>);

}  // namespace corral
