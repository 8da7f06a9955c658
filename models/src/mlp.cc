#include <corral/mlp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

// GCC 12 reports its own AVX-512 intrinsics, inlined into Eigen's packing code, as "maybe
// uninitialized" (GCC bug 105593, fixed in GCC 13); the pragma covers only these headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include <corral/error.h>

#include "models/src/model_size.h"

namespace corral {
namespace {

using Index = Eigen::Index;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Vec = Eigen::VectorXf;

// Eigen packs both operands of a product into blocks of at most rows x depth and depth x cols
// floats, on the stack up to EIGEN_STACK_ALLOCATION_LIMIT bytes and on the heap beyond. Tiles
// of 128 x 256 x 128 keep every block at 128 KiB, so no product allocates; the tiles are also
// the cache blocking Eigen would choose for these sizes, so tiling costs no speed.
constexpr Index kRowTile = 128;
constexpr Index kDepthTile = 256;
constexpr Index kColTile = 128;
static_assert(kRowTile * kDepthTile * sizeof(float) <= EIGEN_STACK_ALLOCATION_LIMIT &&
                  kDepthTile * kColTile * sizeof(float) <= EIGEN_STACK_ALLOCATION_LIMIT,
              "a product tile would make Eigen allocate its packing buffers on the heap");

// Evaluation's forward passes take this many rows at a time (one column tile).
constexpr std::size_t kEvalChunk = kColTile;

// dst = lhs * rhs, tile by tile (see kRowTile).
template <typename Dst, typename Lhs, typename Rhs>
void TiledProduct(Dst dst, const Lhs& lhs, const Rhs& rhs) {
  const Index rows = lhs.rows(), depth = lhs.cols(), cols = rhs.cols();
  for (Index r = 0; r < rows; r += kRowTile) {
    const Index nr = std::min(kRowTile, rows - r);
    for (Index c = 0; c < cols; c += kColTile) {
      const Index nc = std::min(kColTile, cols - c);
      auto out = dst.block(r, c, nr, nc);
      for (Index k = 0; k < depth; k += kDepthTile) {
        const Index nk = std::min(kDepthTile, depth - k);
        if (k == 0) {
          out.noalias() = lhs.block(r, k, nr, nk) * rhs.block(k, c, nk, nc);
        } else {
          out.noalias() += lhs.block(r, k, nr, nk) * rhs.block(k, c, nk, nc);
        }
      }
    }
  }
}

// Softmax in place over a column of k scores.
void SoftmaxColumn(float* z, std::size_t k) {
  const float top = *std::max_element(z, z + k);
  float sum = 0;
  for (std::size_t c = 0; c < k; ++c) {
    z[c] = std::exp(z[c] - top);
    sum += z[c];
  }
  const float inv = 1.0f / sum;
  for (std::size_t c = 0; c < k; ++c) z[c] *= inv;
}

std::size_t ArgMax(const float* z, std::size_t k) {
  return static_cast<std::size_t>(std::max_element(z, z + k) - z);
}

void CheckShape(std::size_t inputs, const std::vector<int>& hidden, const ClassMap& classes,
                float l2) {
  if (inputs == 0) throw Error(ErrorCode::kBadInput, "mlp: the data has no features");
  for (const int h : hidden) {
    if (h <= 0) {
      throw Error(ErrorCode::kBadConfig,
                  "mlp: hidden layer widths must be positive, got " + std::to_string(h));
    }
  }
  if (!std::isfinite(l2) || l2 < 0) {
    throw Error(ErrorCode::kBadConfig, "mlp: l2 must be a finite number >= 0");
  }
  if (classes.size() < 2) {
    throw Error(ErrorCode::kBadInput, "mlp: the training set needs at least 2 classes, has " +
                                          std::to_string(classes.size()));
  }
}

}  // namespace

MlpModel::MlpModel(std::size_t inputs, std::vector<int> hidden, ClassMap classes, float l2)
    : inputs_(inputs), hidden_(std::move(hidden)), classes_(std::move(classes)), l2_(l2) {
  CheckShape(inputs_, hidden_, classes_, l2_);
  double params = 0;
  double in = static_cast<double>(inputs_);
  std::string shape = "mlp: " + std::to_string(inputs_) + " inputs, hidden";
  for (const int h : hidden_) {
    params += h * (in + 1);
    in = h;
    shape.push_back(' ');  // not " " + ...: a false -Wrestrict in GCC 12 at -O3
    shape.append(std::to_string(h));
  }
  params += static_cast<double>(classes_.size()) * (in + 1);
  internal::CheckedNumParams(params, shape + ", " + std::to_string(classes_.size()) + " classes",
                             internal::GradIndex::kSizeT);
  widths_.push_back(inputs_);
  for (const int h : hidden_) widths_.push_back(static_cast<std::size_t>(h));
  widths_.push_back(classes_.size());
  for (std::size_t l = 0; l < NumLayers(); ++l) {
    offsets_.push_back(num_params_);
    num_params_ += widths_[l + 1] * (widths_[l] + 1);
    max_width_ = std::max(max_width_, widths_[l + 1]);
    activation_rows_ += widths_[l + 1];
  }
}

MlpModel::MlpModel(const Dataset& train, std::vector<int> hidden, float l2)
    : MlpModel(train.num_features(), std::move(hidden), ClassMap::Of(train), l2) {}

MlpModel::MlpModel(const TrainingFacts& train, std::vector<int> hidden, float l2)
    : MlpModel(train.num_features, std::move(hidden), train.classes, l2) {}

MlpModel::Workspace MlpModel::MakeWorkspace(std::size_t batch) const {
  Workspace ws;
  ws.batch = batch;
  ws.weights.resize(num_params_);
  ws.input.resize(inputs_ * batch);
  ws.activations.resize(activation_rows_ * batch);
  ws.delta.resize(2 * max_width_ * batch);
  return ws;
}

void MlpModel::Init(std::span<float> w, Rng& rng) const {
  for (std::size_t l = 0; l < NumLayers(); ++l) {
    const std::size_t in = widths_[l], out = widths_[l + 1];
    const bool relu = l + 1 < NumLayers();
    const double fan = relu ? static_cast<double>(in) : static_cast<double>(in + out);
    const auto bound = static_cast<float>(std::sqrt(6.0 / fan));
    float* weights = w.data() + offsets_[l];
    for (std::size_t i = 0; i < out * in; ++i) weights[i] = bound * (2 * rng.UniformFloat() - 1);
    std::fill(weights + out * in, weights + out * (in + 1), 0.0f);
  }
}

namespace {

// Column j of a [inputs x n] block from one row: dense rows of the model's width are copied
// whole; otherwise indices beyond `inputs` are dropped and absent ones are 0.
void GatherColumn(const Dataset& data, std::size_t r, std::size_t inputs, float* column) {
  if (data.is_dense() && data.num_features() == inputs) {
    std::memcpy(column, data.DenseRow(r).data(), inputs * sizeof(float));
    return;
  }
  std::fill(column, column + inputs, 0.0f);
  const SparseRow x = data.Row(r);
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    if (x.index[k] < inputs) column[x.index[k]] = x.value[k];
  }
}

// Forward pass over n columns of `input` at weights w: writes every layer's output block
// ([out x n], ReLU applied for hidden layers) into `act` one after another; returns the last
// one, the logits [K x n].
float* Forward(const MlpModel& m, const float* w, const float* input, Index n, float* act) {
  const float* prev = input;
  float* out_block = act;
  float* logits = act;
  for (std::size_t l = 0; l < m.NumLayers(); ++l) {
    const auto in = static_cast<Index>(m.Width(l)), out = static_cast<Index>(m.Width(l + 1));
    const float* layer = w + m.LayerOffset(l);
    const Eigen::Map<const RowMat> weights(layer, out, in);
    const Eigen::Map<const Vec> bias(layer + out * in, out);
    Eigen::Map<ColMat> z(out_block, out, n);
    TiledProduct(z, weights, Eigen::Map<const ColMat>(prev, in, n));
    if (l + 1 < m.NumLayers()) {
      z = (z.colwise() + bias).cwiseMax(0.0f);
    } else {
      z.colwise() += bias;
    }
    logits = out_block;
    prev = out_block;
    out_block += out * n;
  }
  return logits;
}

}  // namespace

void MlpModel::Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                        DenseGrad& g, Workspace& ws) const {
  const std::size_t count = rows.size();
  const auto n = static_cast<Index>(count);
  const std::size_t k = classes_.size();
  // The one read of the shared parameters: relaxed loads (params.h) into a private snapshot,
  // so the products below read plain memory that no other worker writes.
  w.CopyTo(ws.weights);
  for (std::size_t j = 0; j < count; ++j) {
    GatherColumn(data, rows[j], inputs_, ws.input.data() + j * inputs_);
  }
  float* probs = Forward(*this, ws.weights.data(), ws.input.data(), n, ws.activations.data());

  // d(mean cross-entropy)/d(logits) = (softmax - target) / n; the target is one-hot, or
  // uniform for a label the model does not know.
  float* delta = ws.delta.data();
  float* delta_prev = delta + max_width_ * count;
  const float scale = 1.0f / static_cast<float>(count);
  for (std::size_t j = 0; j < count; ++j) {
    float* z = probs + j * k;
    SoftmaxColumn(z, k);
    float* d = delta + j * k;
    const int id = classes_.Id(data.Label(rows[j]));
    const float uniform = id >= 0 ? 0.0f : 1.0f / static_cast<float>(k);
    const float weighed = scale * data.Weight(rows[j]);  // the sample's weight (1: no bit changes)
    for (std::size_t c = 0; c < k; ++c) d[c] = (z[c] - uniform) * weighed;
    if (id >= 0) d[static_cast<std::size_t>(id)] -= weighed;
  }

  g.l2 = l2_;
  float* act_end = probs;  // layer l's input block ends where its output block begins
  for (std::size_t l = NumLayers(); l-- > 0;) {
    const auto in = static_cast<Index>(widths_[l]), out = static_cast<Index>(widths_[l + 1]);
    float* prev = l == 0 ? ws.input.data() : act_end - in * n;
    const Eigen::Map<const ColMat> a_prev(prev, in, n);
    const Eigen::Map<const ColMat> dz(delta, out, n);
    float* grad = g.grad.data() + offsets_[l];
    TiledProduct(Eigen::Map<RowMat>(grad, out, in), dz, a_prev.transpose());
    // The bias's gradient, each unit's deltas summed over the batch in column order. Not
    // dz.rowwise().sum(): Eigen computes that sum for a packet of units as c0 + ((c1 + c2) +
    // (c3 + c4)) + ... and for a single unit in another order, and which units of the
    // destination go through packets depends on its address's alignment, so the same run gave
    // different bits wherever the heap happened to put the gradient (found by
    // Momentum.ZeroMomentumIsPlainSgdBitForBit on a host where the velocity's allocation
    // shifted it).
    float* bias_grad = grad + out * in;
    std::fill_n(bias_grad, out, 0.0f);
    for (Index j = 0; j < n; ++j) {
      const float* column = delta + j * out;
      for (Index o = 0; o < out; ++o) bias_grad[o] += column[o];
    }
    if (l == 0) break;
    // Back through W and the ReLU: a hidden unit passes gradient only where it was active.
    const Eigen::Map<const RowMat> weights(ws.weights.data() + offsets_[l], out, in);
    Eigen::Map<ColMat> da(delta_prev, in, n);
    TiledProduct(da, weights.transpose(), dz);
    da = (a_prev.array() > 0.0f).select(da, 0.0f);
    std::swap(delta, delta_prev);
    act_end = prev;
  }
}

EvalSums MlpModel::Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                            std::size_t end) const {
  EvalSums s;
  const std::size_t k = classes_.size();
  const std::size_t chunk = std::min(kEvalChunk, end - begin);
  std::vector<float> input(inputs_ * chunk), act(activation_rows_ * chunk);
  for (std::size_t first = begin; first < end; first += chunk) {
    const std::size_t count = std::min(chunk, end - first);
    for (std::size_t j = 0; j < count; ++j) {
      GatherColumn(data, first + j, inputs_, input.data() + j * inputs_);
    }
    const float* logits =
        Forward(*this, w.data(), input.data(), static_cast<Index>(count), act.data());
    for (std::size_t j = 0; j < count; ++j) {
      const float* z = logits + j * k;
      const std::size_t best = ArgMax(z, k);
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += std::exp(double{z[c]} - z[best]);
      const int id = classes_.Id(data.Label(first + j));
      double target = 0;  // the target's log-likelihood up to log Z
      if (id >= 0) {
        target = z[static_cast<std::size_t>(id)];
      } else {
        for (std::size_t c = 0; c < k; ++c) target += z[c];
        target /= static_cast<double>(k);
      }
      s.loss += (z[best] + std::log(sum) - target) * data.Weight(first + j);
      s.correct += id >= 0 && best == static_cast<std::size_t>(id) ? 1.0 : 0.0;
    }
  }
  s.rows += static_cast<double>(end - begin);
  return s;
}

double MlpModel::Regularizer(std::span<const float> w) const {
  double sum = 0;
  for (const float v : w) sum += double{v} * v;
  return 0.5 * l2_ * sum;
}

namespace {

// One row's logits, in `act` (activation_rows floats): the forward pass of a single column.
const float* RowLogits(const MlpModel& m, std::span<const float> w, SparseRow x,
                       std::vector<float>& act) {
  std::vector<float> input(m.inputs(), 0.0f);
  for (std::size_t k = 0; k < x.nnz(); ++k) {
    if (x.index[k] < m.inputs()) input[x.index[k]] = x.value[k];
  }
  return Forward(m, w.data(), input.data(), 1, act.data());
}

}  // namespace

float MlpModel::Predict(std::span<const float> w, SparseRow x) const {
  std::vector<float> act(activation_rows_);
  return classes_.Label(ArgMax(RowLogits(*this, w, x, act), classes_.size()));
}

void MlpModel::Probabilities(std::span<const float> w, SparseRow x, std::span<float> p) const {
  std::vector<float> act(activation_rows_);
  const float* logits = RowLogits(*this, w, x, act);
  std::copy(logits, logits + classes_.size(), p.begin());
  SoftmaxColumn(p.data(), p.size());
}

static_assert(Model<MlpModel>, "MlpModel must satisfy corral::Model; see model.h");

}  // namespace corral
