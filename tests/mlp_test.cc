// MlpModel: gradients against finite differences (dense and sparse input, unknown labels),
// seeded initialisation, a non-linear problem learnt by serial SGD, and prediction agreeing
// with evaluation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "gradient_check.h"

namespace corral {
namespace {

// Rows of `features` uniform values in [-1, 1], labels from `names` at random.
Dataset RandomDense(std::size_t rows, std::size_t features, std::vector<float> names,
                    std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(rows * features), labels(rows);
  for (float& v : values) v = 2 * rng.UniformFloat() - 1;
  for (float& l : labels) l = names[rng.Below(names.size())];
  return Dataset::Dense(std::move(values), std::move(labels), features, "random-dense");
}

// The same rows stored as CSR, zeros dropped.
Dataset AsSparse(const Dataset& dense) {
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  for (std::size_t r = 0; r < dense.rows(); ++r) {
    const std::span<const float> x = dense.DenseRow(r);
    for (std::size_t u = 0; u < x.size(); ++u) {
      if (x[u] == 0) continue;
      index.push_back(static_cast<std::uint32_t>(u));
      value.push_back(x[u]);
    }
    row_ptr.push_back(index.size());
  }
  const std::span<const float> l = dense.labels();
  return Dataset(std::move(row_ptr), std::move(index), std::move(value),
                 std::vector<float>(l.begin(), l.end()), dense.num_features(), "as-sparse");
}

// Points in [-1, 1]^2, labelled 1, 2, 5 by radius (< 0.45, < 0.8, beyond): rings that no
// linear model separates.
Dataset Rings(std::size_t rows, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values, labels;
  for (std::size_t r = 0; r < rows; ++r) {
    const float x = 2 * rng.UniformFloat() - 1, y = 2 * rng.UniformFloat() - 1;
    const float radius = std::sqrt(x * x + y * y);
    values.insert(values.end(), {x, y});
    labels.push_back(radius < 0.45f ? 1.0f : radius < 0.8f ? 2.0f : 5.0f);
  }
  return Dataset::Dense(std::move(values), std::move(labels), 2, "rings");
}

std::vector<float> Initial(const MlpModel& model, std::uint64_t seed) {
  std::vector<float> w(model.NumParams());
  Rng rng(seed);
  model.Init(std::span(w), rng);
  return w;
}

std::vector<float> GradientOf(const MlpModel& model, std::vector<float> w, const Dataset& data,
                              std::vector<std::uint32_t> rows, std::size_t ws_batch) {
  DenseGrad g = model.MakeGrad(data, ws_batch);
  MlpModel::Workspace ws = model.MakeWorkspace(ws_batch);
  model.Gradient(Params(std::span(w)), data, rows, g, ws);
  return g.grad;
}

TEST(MlpModel, LayoutAndShape) {
  const Dataset data = RandomDense(20, 6, {0, 1, 2}, 1);
  const MlpModel model(data, {5, 4}, 0.01f);
  EXPECT_EQ(model.inputs(), 6u);
  EXPECT_EQ(model.classes().size(), 3u);
  ASSERT_EQ(model.NumLayers(), 3u);
  EXPECT_EQ(model.NumParams(), 5u * 7 + 4 * 6 + 3 * 5);
  EXPECT_EQ(model.LayerOffset(0), 0u);
  EXPECT_EQ(model.LayerOffset(1), 35u);
  EXPECT_EQ(model.LayerOffset(2), 59u);
  EXPECT_EQ(MlpModel(784, {256, 128}, ClassMap({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0).NumParams(),
            784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
}

TEST(MlpModel, RejectsBadShapes) {
  const Dataset data = RandomDense(20, 6, {0, 1, 2}, 1);
  try {
    MlpModel(data, {5, 0}, 0.01f);
    FAIL() << "a zero-width layer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
  }
  try {
    MlpModel(data, {5}, -1.0f);
    FAIL() << "a negative l2 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
  }
  try {
    MlpModel(RandomDense(20, 6, {3}, 1), {5}, 0.01f);
    FAIL() << "a single class was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
  }
}

// eps 1e-3 keeps the central difference off the ReLU kinks at this seed, and float rounding
// of the loss (~1e-7) far below the 1e-3 tolerance; a wrong factor or a missing ReLU mask
// in the backward pass moves coordinates by 1e-2 and more.
constexpr double kEps = 1e-3;
constexpr double kTol = 1e-3;

TEST(MlpModel, GradientMatchesFiniteDifferencesOnDenseRows) {
  const Dataset data = RandomDense(40, 6, {1, 2, 5}, 3);
  const MlpModel model(data, {5, 4}, 0.01f);
  const std::vector<float> w = Initial(model, 4);
  testing::ExpectGradientMatches(model, w, data, {0}, 400, kEps, kTol);
  testing::ExpectGradientMatches(model, w, data, {1, 2, 3, 4, 5, 6, 7}, 400, kEps, kTol);
  testing::ExpectGradientMatches(model, w, data, {8, 9, 8, 10}, 400, kEps, kTol);
}

TEST(MlpModel, GradientMatchesFiniteDifferencesOnSparseRows) {
  // Every other value zeroed, so the CSR rows really are sparse.
  const Dataset dense = RandomDense(30, 6, {1, 2, 5}, 5);
  std::vector<float> values(dense.value().begin(), dense.value().end());
  for (std::size_t i = 0; i < values.size(); i += 2) values[i] = 0;
  const std::span<const float> l = dense.labels();
  const Dataset holey = Dataset::Dense(values, std::vector<float>(l.begin(), l.end()), 6);
  const Dataset sparse = AsSparse(holey);
  ASSERT_FALSE(sparse.is_dense());
  const MlpModel model(sparse, {5, 4}, 0.01f);
  const std::vector<float> w = Initial(model, 6);
  testing::ExpectGradientMatches(model, w, sparse, {0, 1, 2, 3, 4, 5}, 400, kEps, kTol);
  // Dense and sparse storage of the same rows give the same gradient.
  EXPECT_EQ(GradientOf(model, w, sparse, {0, 1, 2, 3}, 4), GradientOf(model, w, holey, {0, 1, 2, 3}, 4));
}

TEST(MlpModel, GradientMatchesFiniteDifferencesWithUnknownLabels) {
  // Trained on classes {1, 2, 5}; rows labelled 7 are scored against the uniform target.
  const MlpModel model(6, {5, 4}, ClassMap({1, 2, 5}), 0.0f);
  const Dataset data = RandomDense(10, 6, {1, 7}, 7);
  const std::vector<float> w = Initial(model, 8);
  testing::ExpectGradientMatches(model, w, data, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 400, kEps, kTol);
}

TEST(MlpModel, PartialBatchMatchesExactWorkspace) {
  const Dataset data = RandomDense(20, 6, {1, 2, 5}, 9);
  const MlpModel model(data, {5, 4}, 0.01f);
  const std::vector<float> w = Initial(model, 10);
  EXPECT_EQ(GradientOf(model, w, data, {3, 1, 4}, 16), GradientOf(model, w, data, {3, 1, 4}, 3));
}

// The same gradient wherever the heap puts its buffer: the bias's gradient is a sum over the
// batch, and a sum whose order followed the destination's alignment (Eigen's rowwise().sum())
// gave runs that differed in the last bits with the allocations before them. Gradients written
// into buffers at every 64-byte alignment class the heap offers must agree bit for bit. glibc's
// heap offers several; a sanitizer's allocator places every block of a size alike, so the
// address cannot move the bits there and there is nothing to compare (the Release suite runs
// the comparison).
TEST(MlpModel, GradientDoesNotDependOnItsBuffersAddress) {
  const Dataset data = RandomDense(40, 7, {1, 2, 5}, 11);
  const MlpModel model(data, {21, 13}, 0.01f);
  std::vector<float> w = Initial(model, 12);
  const std::vector<std::uint32_t> rows{0, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33};
  MlpModel::Workspace ws = model.MakeWorkspace(rows.size());
  std::vector<DenseGrad> grads;
  std::vector<std::uintptr_t> alignments;
  for (int i = 0; i < 64 && alignments.size() < 4; ++i) {
    grads.emplace_back(model.NumParams());
    const auto alignment = reinterpret_cast<std::uintptr_t>(grads.back().grad.data()) % 64;
    if (std::find(alignments.begin(), alignments.end(), alignment) == alignments.end()) {
      alignments.push_back(alignment);
    }
  }
  if (alignments.size() < 2) GTEST_SKIP() << "the allocator gives every buffer one alignment";
  std::vector<float> first;
  for (DenseGrad& g : grads) {
    model.Gradient(Params(std::span(w)), data, rows, g, ws);
    if (first.empty()) first = g.grad;
    ASSERT_EQ(g.grad, first) << "gradient at address alignment "
                             << reinterpret_cast<std::uintptr_t>(g.grad.data()) % 64;
  }
}

TEST(MlpModel, GradientReportsThePlainL2Weight) {
  const Dataset data = RandomDense(20, 6, {1, 2, 5}, 9);
  const MlpModel model(data, {5, 4}, 0.01f);
  std::vector<float> w = Initial(model, 10);
  DenseGrad g(model.NumParams());
  g.l2 = -1;
  MlpModel::Workspace ws = model.MakeWorkspace(2);
  model.Gradient(Params(std::span(w)), data, std::vector<std::uint32_t>{0, 1}, g, ws);
  EXPECT_EQ(g.l2, 0.01f);
  EXPECT_NEAR(model.Regularizer(w),
              0.5 * double{0.01f} * std::inner_product(w.begin(), w.end(), w.begin(), 0.0),
              1e-9);
}

TEST(MlpModel, InitIsSeededAndLayerAppropriate) {
  const MlpModel model(784, {256, 128}, ClassMap({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0.0f);
  const std::vector<float> a = Initial(model, 11), b = Initial(model, 11), c = Initial(model, 12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t l = 0; l < model.NumLayers(); ++l) {
    const std::size_t in = model.Width(l), out = model.Width(l + 1);
    const bool relu = l + 1 < model.NumLayers();
    // He-uniform for ReLU layers, Glorot-uniform for the softmax layer.
    const double bound = std::sqrt(6.0 / static_cast<double>(relu ? in : in + out));
    const auto first = a.begin() + static_cast<std::ptrdiff_t>(model.LayerOffset(l));
    const auto biases = first + static_cast<std::ptrdiff_t>(in * out);
    const auto [lo, hi] = std::minmax_element(first, biases);
    EXPECT_GE(*lo, -bound) << "layer " << l;
    EXPECT_LE(*hi, bound) << "layer " << l;
    // A uniform draw of in*out >= 1280 values comes within 2% of both ends.
    EXPECT_LT(*lo, -0.98 * bound) << "layer " << l;
    EXPECT_GT(*hi, 0.98 * bound) << "layer " << l;
    EXPECT_TRUE(std::all_of(biases, biases + static_cast<std::ptrdiff_t>(out),
                            [](float v) { return v == 0; }))
        << "layer " << l;
  }
}

TEST(MlpModel, EvaluateAndLossOnKnownLogits) {
  // No hidden layer: logits = W x + b with W = [[1, 0], [0, 1], [0, 0]], b = 0.
  const MlpModel model(2, {}, ClassMap({0, 1, 2}), 0.5f);
  const std::vector<float> w = {1, 0, 0, 1, 0, 0, 0, 0, 0};
  // x = (1, 2): logits (1, 2, 0); labels 1 (right), 0 (wrong), 9 (unknown: wrong, scored
  // against the uniform target, whose log-likelihood is mean(logits) - log Z = 1 - log Z).
  const Dataset data = Dataset::Dense({1, 2, 1, 2, 1, 2}, {1, 0, 9}, 2);
  const double log_z = std::log(std::exp(1.0) + std::exp(2.0) + 1.0);
  const EvalSums s = model.Evaluate(w, data, 0, 3);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.correct, 1);
  EXPECT_NEAR(s.loss, (log_z - 2) + (log_z - 1) + (log_z - 1), 1e-6);
  EXPECT_EQ(model.Predict(w, data.Row(0)), 1.0f);
  EXPECT_NEAR(model.Regularizer(w), 0.5 * 0.5 * 2, 1e-12);
}

TEST(MlpModel, LearnsRingsWithSerialSgd) {
  const Dataset train = Rings(4000, 13), test = Rings(1000, 14);
  const MlpModel model(train, {32, 16}, 1e-5f);
  std::vector<float> storage = Initial(model, 15);
  const Params w(storage);
  constexpr std::size_t kBatch = 8;
  DenseGrad g = model.MakeGrad(train, kBatch);
  MlpModel::Workspace ws = model.MakeWorkspace(kBatch);
  std::vector<std::uint32_t> order(train.rows());
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(16);
  float eta = 0.2f;
  for (int epoch = 0; epoch < 30; ++epoch, eta *= 0.95f) {
    rng.Shuffle(std::span(order));
    for (std::size_t k = 0; k < order.size(); k += kBatch) {
      const std::size_t count = std::min(kBatch, order.size() - k);
      model.Gradient(w, train, std::span(order).subspan(k, count), g, ws);
      ApplyStep(w, g, eta);
    }
  }
  const EvalSums s = model.Evaluate(storage, test, 0, test.rows());
  // The best linear rule reaches about 0.5 here (the middle ring is the largest class).
  EXPECT_GE(s.correct / s.rows, 0.95);
  EXPECT_LT(s.loss / s.rows, 0.2);
}

TEST(MlpModel, PredictAgreesWithEvaluateAndChunkingChangesNothing) {
  const Dataset data = Rings(700, 17);  // more rows than one evaluation chunk
  const MlpModel model(data, {8, 8}, 0.0f);
  const std::vector<float> w = Initial(model, 18);
  const EvalSums whole = model.Evaluate(w, data, 0, data.rows());
  double correct = 0, loss = 0;
  for (std::size_t r = 0; r < data.rows(); ++r) {
    correct += model.Predict(w, data.Row(r)) == data.Label(r) ? 1 : 0;
    loss += model.Evaluate(w, data, r, r + 1).loss;
  }
  EXPECT_GT(whole.correct, 0);
  EXPECT_LT(whole.correct, whole.rows);
  EXPECT_EQ(whole.correct, correct);
  EXPECT_NEAR(whole.loss, loss, 1e-5 * loss);  // one row may take another product kernel
}

}  // namespace
}  // namespace corral
