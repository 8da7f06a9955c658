// The embedding API: custom models through TrainCustom on every algorithm, LiveModel
// snapshots while training runs, and the CLI and the library agreeing bit for bit.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <corral/corral.h>

namespace {

// Least squares written as a user would: y ~ <w, x>.
struct UserSquared {
  std::size_t dim;
  std::size_t NumParams() const { return dim; }
  float Predict(const corral::Params& w, const corral::SparseRow& x) const {
    float dot = 0;
    for (std::size_t k = 0; k < x.nnz(); ++k) dot += w[x.index[k]] * x.value[k];
    return dot;
  }
  double Loss(const corral::Params& w, const corral::SparseRow& x, float y) const {
    const double r = Predict(w, x) - y;
    return 0.5 * r * r;
  }
  void AddGradient(const corral::Params& w, const corral::SparseRow& x, float y,
                   std::span<float> grad) const {
    const float r = Predict(w, x) - y;
    for (std::size_t k = 0; k < x.nnz(); ++k) grad[x.index[k]] += r * x.value[k];
  }
};

// Binary logistic regression with the optional members: task and initialisation.
struct UserLogistic : UserSquared {
  static constexpr corral::Task kTask = corral::Task::kBinary;
  double Loss(const corral::Params& w, const corral::SparseRow& x, float y) const {
    const double m = (y > 0 ? 1.0 : -1.0) * Predict(w, x);
    return std::log1p(std::exp(-m));
  }
  void AddGradient(const corral::Params& w, const corral::SparseRow& x, float y,
                   std::span<float> grad) const {
    const float s = y > 0 ? 1.0f : -1.0f;
    const float coef = -s / (1.0f + std::exp(s * Predict(w, x)));
    for (std::size_t k = 0; k < x.nnz(); ++k) grad[x.index[k]] += coef * x.value[k];
  }
  void Init(std::span<float> w, corral::Rng& /*rng*/) const {
    for (float& v : w) v = 0.0f;
  }
};

struct NoGradient {
  std::size_t NumParams() const { return 1; }
  float Predict(const corral::Params&, const corral::SparseRow&) const { return 0; }
  double Loss(const corral::Params&, const corral::SparseRow&, float) const { return 0; }
};

static_assert(corral::CustomModel<UserSquared>);
static_assert(corral::CustomModel<UserLogistic>);
static_assert(!corral::CustomModel<NoGradient>);
// The engine's own concept holds for every built-in model (public headers, public template).
static_assert(corral::Model<corral::LogisticModel>);
static_assert(corral::Model<corral::HingeModel>);
static_assert(corral::Model<corral::SquaredModel>);
static_assert(corral::Model<corral::SoftmaxModel>);
static_assert(corral::Model<corral::MfModel>);
static_assert(corral::Model<corral::MlpModel>);

corral::SyntheticSplit Regression() {
  return corral::MakeSyntheticRegression(
      {.rows = 2'000, .features = 30, .nnz_per_row = 8, .noise = 0.0, .seed = 4}, 200);
}

double InitialObjective(const corral::Dataset& data, const UserSquared& model) {
  std::vector<float> zeros(model.NumParams(), 0.0f);
  const corral::Params w{std::span(zeros)};
  double sum = 0;
  for (std::size_t r = 0; r < data.rows(); ++r) sum += model.Loss(w, data.Row(r), data.Label(r));
  return sum / static_cast<double>(data.rows());
}

class CustomModelTest : public ::testing::TestWithParam<corral::Algorithm> {};

TEST_P(CustomModelTest, ReachesTheNoiselessOptimum) {
  const corral::SyntheticSplit data = Regression();
  const UserSquared model{data.train.num_features()};
  const corral::TrainConfig config{.algorithm = GetParam(), .l2 = 0.0f, .threads = 2,
                                   .epochs = 15, .batch = 4, .lr = 0.05f, .lr_decay = 0.95f};
  const corral::TrainResult r = corral::TrainCustom(model, data.train, &data.test, config);
  ASSERT_EQ(r.params.size(), model.NumParams());
  ASSERT_EQ(r.history.size(), 15u);
  // Realisable data, no noise, no L2: the optimum's objective is 0.
  EXPECT_LT(r.history.back().objective, 1e-3 * InitialObjective(data.train, model));
  ASSERT_TRUE(r.history.back().test_rmse.has_value());
  EXPECT_LT(*r.history.back().test_rmse, 0.1);
}

INSTANTIATE_TEST_SUITE_P(AllModes, CustomModelTest,
                         ::testing::Values(corral::Algorithm::kHogwild, corral::Algorithm::kLocked,
                                           corral::Algorithm::kSync, corral::Algorithm::kQsgd,
                                           corral::Algorithm::kDpsgd, corral::Algorithm::kLocal),
                         [](const auto& param_info) { return std::string(corral::ToString(param_info.param)); });

TEST(CustomModel, ClassifiesAndIsDeterministicWithOneThread) {
  const corral::SyntheticSplit data = corral::MakeSyntheticClassification(
      {.rows = 3'000, .features = 50, .nnz_per_row = 10, .seed = 8}, 500);
  const UserLogistic model{{data.train.num_features()}};
  const corral::TrainConfig config{.threads = 1, .epochs = 5, .seed = 3};
  const corral::TrainResult a = corral::TrainCustom(model, data.train, &data.test, config);
  const corral::TrainResult b = corral::TrainCustom(model, data.train, &data.test, config);
  EXPECT_EQ(a.params, b.params);
  EXPECT_TRUE(a.lr_searched);
  ASSERT_TRUE(a.history.back().test_acc.has_value());
  EXPECT_GT(*a.history.back().test_acc, 0.8);
  EXPECT_FALSE(a.history.back().test_rmse.has_value());
}

TEST(CustomModel, RejectsBuckwildAndResumeByName) {
  const corral::SyntheticSplit data = Regression();
  const UserSquared model{data.train.num_features()};
  try {
    corral::TrainCustom(model, data.train, nullptr, {.algorithm = corral::Algorithm::kBuckwild});
    FAIL() << "buckwild accepted a custom model";
  } catch (const corral::Error& e) {
    EXPECT_EQ(e.code(), corral::ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("not a custom model"), std::string::npos) << e.what();
  }
  EXPECT_THROW(corral::TrainCustom(model, data.train, nullptr, {.resume_path = "x.model"}),
               corral::Error);
  EXPECT_THROW(corral::TrainCustom(model, data.train, nullptr, {.epochs = 0}), corral::Error);
}

// A snapshot taken from on_eval is the evaluated model; the last one is the result.
void ExpectLiveSnapshots(corral::Algorithm algorithm, int threads) {
  const corral::SyntheticSplit data = corral::MakeSyntheticClassification(
      {.rows = 4'000, .features = 200, .nnz_per_row = 10, .seed = 2}, 0);
  corral::LiveModel live;
  std::vector<float> w;
  EXPECT_FALSE(live.Snapshot(w));  // no run yet
  EXPECT_TRUE(w.empty());

  std::vector<float> at_eval, mid_epoch;
  corral::TrainObserver observer{.live = &live};
  observer.on_eval = [&](const corral::EvalPoint&) {
    EXPECT_TRUE(live.training());
    EXPECT_TRUE(live.Snapshot(at_eval));
    return true;
  };
  // The coordinator's progress ticks come while the workers run: a snapshot mid-epoch.
  observer.on_progress = [&](const corral::Progress&) { live.Snapshot(mid_epoch); };

  // A serving thread takes snapshots as fast as it can meanwhile.
  std::atomic<bool> done{false};  // W: test thread; R: server; relaxed: only ends the loop
  std::atomic<int> bad{0};
  std::jthread server([&] {
    std::vector<float> s;
    while (!done.load(std::memory_order_relaxed)) {
      // Often, but leaving the CPU to the workers (a sync barrier is slow when oversubscribed).
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (!live.Snapshot(s)) continue;
      for (const float v : s) {
        if (!std::isfinite(v)) bad.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  const corral::TrainConfig config{.algorithm = algorithm, .threads = threads, .epochs = 3,
                                   .batch = 2, .lr = 0.1f, .topology = "ring"};
  const corral::TrainResult r = corral::Train(data.train, nullptr, config, observer);
  done.store(true, std::memory_order_relaxed);
  server.join();

  EXPECT_EQ(bad.load(), 0);
  EXPECT_FALSE(live.training());
  EXPECT_EQ(at_eval, r.params);  // bit for bit: the same mean, computed the same way
  ASSERT_TRUE(live.Snapshot(w));
  EXPECT_EQ(w, r.params);
  if (!mid_epoch.empty()) {
    EXPECT_EQ(mid_epoch.size(), r.params.size());
  }
  EXPECT_GE(live.snapshots(), 4u);
}

TEST(LiveModel, HogwildSnapshotsWhileTraining) { ExpectLiveSnapshots(corral::Algorithm::kHogwild, 3); }
TEST(LiveModel, DpsgdSnapshotsAreTheReplicasMean) { ExpectLiveSnapshots(corral::Algorithm::kDpsgd, 4); }
TEST(LiveModel, LocalSnapshotsAreTheReplicasMean) { ExpectLiveSnapshots(corral::Algorithm::kLocal, 3); }
TEST(LiveModel, SyncSnapshotsWhileTraining) { ExpectLiveSnapshots(corral::Algorithm::kSync, 2); }

TEST(LiveModel, OneRunAtATime) {
  const corral::SyntheticSplit data = Regression();
  corral::LiveModel live;
  const corral::TrainConfig config{.model = corral::ModelKind::kSquared, .threads = 1, .epochs = 1};
  bool nested_threw = false;
  corral::TrainObserver observer{.live = &live};
  observer.on_eval = [&](const corral::EvalPoint&) {
    try {
      corral::Train(data.train, nullptr, config, {.live = &live});
    } catch (const corral::Error& e) {
      nested_threw = e.code() == corral::ErrorCode::kBadConfig;
    }
    return true;
  };
  corral::Train(data.train, nullptr, config, observer);
  EXPECT_TRUE(nested_threw);
}

#ifdef CORRAL_CLI_PATH
// The CLI is a thin client: with one thread the same config gives the same model, bit for bit.
TEST(Embedding, CliAndLibraryGiveBitIdenticalModels) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("corral_embed_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const corral::SyntheticSplit data = corral::MakeSyntheticClassification(
      {.rows = 3'000, .features = 300, .nnz_per_row = 12, .seed = 6}, 0);
  const std::string svm = (dir / "train.svm").string();
  const std::string model_path = (dir / "cli.model").string();
  corral::WriteLibsvm(data.train, svm);
  const std::string command = std::string(CORRAL_CLI_PATH) + " train --data " + svm +
                              " --threads 1 --epochs 3 --seed 9 --quiet --save " + model_path;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  const corral::Dataset train = corral::ReadLibsvm(svm);
  const corral::TrainResult lib =
      corral::Train(train, nullptr, {.threads = 1, .epochs = 3, .seed = 9});
  const corral::SavedModel cli = corral::LoadModel(model_path);
  EXPECT_EQ(cli.params, lib.params);
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
