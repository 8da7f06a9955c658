#include <corral/mf.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <corral/error.h>

#include "models/src/model_size.h"

namespace corral {
namespace {

const RatingsInfo& RequireRatings(const Dataset& data) {
  if (data.ratings() == nullptr) {
    throw Error(ErrorCode::kBadInput,
                data.name() + ": model mf needs ratings data (user item rating), e.g. --format ratings");
  }
  return *data.ratings();
}

float MeanLabel(const Dataset& data) {
  double sum = 0;
  for (const float y : data.labels()) sum += y;
  return data.rows() > 0 ? static_cast<float>(sum / static_cast<double>(data.rows())) : 0.0f;
}

// Half-width a of uniform factor entries (variance a^2/3) such that <p, q>, a sum of `rank`
// products of independent entries, has variance rank * (a^2/3)^2 = `variance`.
float InitScale(double variance, int rank) {
  return static_cast<float>(std::sqrt(3.0 * std::sqrt(variance / rank)));
}

// users + items, once the model's (users + items) x (rank + 1) parameters are known to fit
// the SparseGrad's uint32 indices and memory.
std::size_t CheckedRows(std::size_t users, std::size_t items, int rank) {
  if (rank < 1) throw Error(ErrorCode::kBadConfig, "mf: --rank must be >= 1");
  const double rows = static_cast<double>(users) + static_cast<double>(items);
  internal::CheckedNumParams(rows * (rank + 1.0),
                             "mf: rank " + std::to_string(rank) + " with " +
                                 std::to_string(users) + " users and " + std::to_string(items) +
                                 " items",
                             internal::GradIndex::kUint32);
  return users + items;
}

}  // namespace

MfModel::MfModel(std::size_t users, std::size_t items, int rank, float mean, float l2,
                 Bias bias)
    : users_(users),
      items_(items),
      rank_(rank),
      stride_(static_cast<std::size_t>(rank) + 1),
      mean_(mean),
      l2_(l2),
      bias_(bias),
      init_scale_(0),
      l2_weight_(CheckedRows(users, items, rank), l2) {
  if (!std::isfinite(l2) || l2 < 0) {
    throw Error(ErrorCode::kBadConfig, "mf: l2 must be a finite number >= 0");
  }
  init_scale_ = InitScale(1.0, rank);
}

MfModel::MfModel(const Dataset& train, int rank, float l2, Bias bias)
    : MfModel(RequireRatings(train).num_users, RequireRatings(train).num_items, rank,
              MeanLabel(train), l2, bias) {
  double sum_sq = 0;
  for (const float y : train.labels()) sum_sq += (double{y} - mean_) * (double{y} - mean_);
  const double variance = train.rows() > 0 ? sum_sq / static_cast<double>(train.rows()) : 0.0;
  // Constant ratings leave nothing for the factors: keep them small but not all equal to 0
  // (a saddle with zero gradient).
  constexpr double kFloor = 1e-4;
  init_scale_ = InitScale(std::max(variance, kFloor), rank);
  std::vector<std::size_t> count(users_ + items_, 0);
  for (std::size_t r = 0; r < train.rows(); ++r) {
    const Pair p = Decode(train, r);
    ++count[p.user];
    ++count[users_ + p.item];
  }
  const double n = static_cast<double>(train.rows());
  for (std::size_t j = 0; j < count.size(); ++j) {
    l2_weight_[j] = count[j] > 0 ? static_cast<float>(l2 * n / static_cast<double>(count[j])) : 0.0f;
  }
}

MfModel::Pair MfModel::Decode(const Dataset& data, std::size_t r) {
  const SparseRow x = data.Row(r);
  return {x.index[0], x.index[1] - data.ratings()->num_users};
}

void MfModel::Init(std::span<float> w, Rng& rng) const {
  for (std::size_t j = 0; j < users_ + items_; ++j) {
    float* block = w.data() + j * stride_;
    for (int k = 0; k < rank_; ++k) block[k] = (2 * rng.UniformFloat() - 1) * init_scale_;
    block[rank_] = 0.0f;
  }
}

template <typename W>
float MfModel::PredictWith(const W& w, Pair p) const {
  float pred = mean_;
  const bool known_user = p.user < users_;
  const bool known_item = p.item < items_;
  const std::size_t ub = p.user * stride_;
  const std::size_t ib = (users_ + p.item) * stride_;
  if (known_user) pred += w[ub + static_cast<std::size_t>(rank_)];
  if (known_item) pred += w[ib + static_cast<std::size_t>(rank_)];
  if (known_user && known_item) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(rank_); ++k) pred += w[ub + k] * w[ib + k];
  }
  return pred;
}

void MfModel::Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                       SparseGrad& g, Workspace& /*ws*/) const {
  g.Clear();
  const float scale = 1.0f / static_cast<float>(rows.size());
  const auto rank = static_cast<std::size_t>(rank_);
  for (const std::uint32_t r : rows) {
    const Pair p = Decode(data, r);
    if (p.user >= users_ || p.item >= items_) continue;  // train rows are always known
    const float e = (PredictWith(w, p) - data.Label(r)) * scale * data.Weight(r);
    const std::size_t ub = p.user * stride_;
    const std::size_t ib = (users_ + p.item) * stride_;
    const float ureg = l2_weight_[p.user] * scale;
    const float ireg = l2_weight_[users_ + p.item] * scale;
    for (std::size_t k = 0; k < rank; ++k) {
      const float pu = w.Load(ub + k);
      const float qi = w.Load(ib + k);
      g.Push(static_cast<std::uint32_t>(ub + k), e * qi, ureg);
      g.Push(static_cast<std::uint32_t>(ib + k), e * pu, ireg);
    }
    if (bias_ == Bias::kNone) continue;  // the biases stay at their initial 0
    g.Push(static_cast<std::uint32_t>(ub + rank), e, ureg);
    g.Push(static_cast<std::uint32_t>(ib + rank), e, ireg);
  }
}

EvalSums MfModel::Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                           std::size_t end) const {
  RequireRatings(data);
  EvalSums s;
  for (std::size_t r = begin; r < end; ++r) {
    const double e = double{PredictWith(w, Decode(data, r))} - data.Label(r);
    s.loss += 0.5 * e * e * data.Weight(r);
    s.sq_err += e * e;
  }
  s.rows += static_cast<double>(end - begin);
  return s;
}

double MfModel::Regularizer(std::span<const float> w) const {
  double sum = 0;
  for (const float v : w) sum += double{v} * v;
  return 0.5 * l2_ * sum;
}

float MfModel::Predict(std::span<const float> w, std::size_t user, std::size_t item) const {
  return PredictWith(w, Pair{user, item});
}

float MfModel::PredictRow(std::span<const float> w, const Dataset& data, std::size_t r) const {
  return PredictWith(w, Decode(data, r));
}

static_assert(Model<MfModel>);

}  // namespace corral
