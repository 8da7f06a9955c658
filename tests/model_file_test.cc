// Model files: save, load and evaluate every model kind; reject damaged files.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <corral/corral.h>

#include "temp_file.h"
#include "test_data.h"

namespace corral {
namespace {

class ModelFileRoundTrip : public ::testing::TestWithParam<ModelKind> {};

TEST_P(ModelFileRoundTrip, SaveLoadEvalGivesTheTrainingNumbers) {
  const ModelKind kind = GetParam();
  const bool ratings = kind == ModelKind::kMf;
  const Dataset train = ratings ? testing::PlantedRatings(30, 20, 2, 600, 0.1, 1)
                                : testing::SmallProblem().train;
  TrainConfig config{.model = kind, .l2 = 1e-3f, .threads = 1, .epochs = 2, .lr = 0.05f};
  config.hidden = {8};
  config.rank = 2;
  config.batch = kind == ModelKind::kMlp ? 4 : 1;
  const TrainResult r = Train(train, nullptr, config);
  const std::string path = TempPath("model_" + std::string(ToString(kind)) + ".corral");
  SaveModel(path, {r.model, r.params});

  const SavedModel loaded = LoadModel(path);
  EXPECT_EQ(loaded.params, r.params);
  EXPECT_EQ(loaded.info.kind, kind);
  const Evaluation e = EvaluateModel(loaded, train);
  EXPECT_DOUBLE_EQ(e.loss, r.history.back().train_loss);
  EXPECT_DOUBLE_EQ(e.objective, r.history.back().objective);
  // Regression (squared, mf) reports RMSE, classification accuracy; never both.
  ASSERT_NE(e.rmse.has_value(), e.accuracy.has_value());
  if (e.rmse) {
    EXPECT_DOUBLE_EQ(*e.rmse, *r.history.back().train_rmse);
  } else {
    EXPECT_DOUBLE_EQ(*e.accuracy, *r.history.back().train_acc);
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelFileRoundTrip,
                         ::testing::Values(ModelKind::kLogistic, ModelKind::kHinge,
                                           ModelKind::kSquared, ModelKind::kSoftmax,
                                           ModelKind::kMf, ModelKind::kMlp),
                         [](const auto& param_info) { return std::string(ToString(param_info.param)); });

class DamagedModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const TrainResult r = Train(testing::SmallProblem().train, nullptr,
                                {.threads = 1, .epochs = 1, .lr = 0.1f});
    path_ = TempPath("damaged.corral");  // per process and test (temp_file.h)
    SaveModel(path_, {r.model, r.params});
    std::ifstream in(path_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  void Write(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
  }
  void ExpectRejected(const std::string& what) {
    try {
      LoadModel(path_);
      FAIL() << "expected rejection: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  std::string path_;
  std::string bytes_;
};

TEST_F(DamagedModelFile, FlippedByteFailsTheChecksum) {
  std::string bytes = bytes_;
  bytes[bytes.size() / 2] ^= 0x40;
  Write(bytes);
  ExpectRejected("checksum");
}

TEST_F(DamagedModelFile, TruncationIsDetected) {
  Write(bytes_.substr(0, bytes_.size() - 9));
  ExpectRejected("truncated");
}

TEST_F(DamagedModelFile, WrongMagicAndVersionAreNamed) {
  Write("not a model at all");
  ExpectRejected("magic");
  std::string bytes = bytes_;
  bytes[8] = 99;  // the version field follows the 8-byte magic
  Write(bytes);
  ExpectRejected("version 99");
}

// Every field of a checkpoint's training state comes back as written.
TEST(ModelFile, TrainingStateRoundTrips) {
  const TrainResult r = Train(testing::SmallProblem().train, nullptr,
                              {.algorithm = Algorithm::kDpsgd, .threads = 2, .epochs = 1,
                               .lr = 0.05f, .shuffle = Shuffle::kOff});
  SavedModel saved = ToSavedModel(r);
  ASSERT_TRUE(saved.training.has_value());
  TrainingState& t = *saved.training;
  ASSERT_EQ(t.optimizer, Optimizer::kSgd);  // recorded by every run
  t.position = {7, 11};
  t.samples = 1234;
  t.optimizer = Optimizer::kMomentum;
  const std::string path = TempPath("state.corral");
  SaveModel(path, saved);
  const TrainingState back = *LoadModel(path).training;
  EXPECT_EQ(back.optimizer, t.optimizer);
  EXPECT_EQ(back.algorithm, t.algorithm);
  EXPECT_EQ(back.threads, t.threads);
  EXPECT_EQ(back.seed, t.seed);
  EXPECT_EQ(back.lr, t.lr);
  EXPECT_EQ(back.lr_decay, t.lr_decay);
  EXPECT_EQ(back.batch, t.batch);
  EXPECT_EQ(back.topology, t.topology);
  EXPECT_EQ(back.compress, t.compress);
  EXPECT_EQ(back.order, t.order);
  EXPECT_EQ(back.epochs_done, t.epochs_done);
  EXPECT_EQ(back.position, t.position);
  EXPECT_EQ(back.train_s, t.train_s);
  EXPECT_EQ(back.samples, t.samples);
}

// A run saves the mode that ran; a training state naming auto (never written by a run) is refused.
TEST(ModelFile, TrainingStateNamingAutoIsRefused) {
  SavedModel saved = ToSavedModel(Train(testing::SmallProblem().train, nullptr,
                                        {.threads = 1, .epochs = 1, .lr = 0.05f}));
  ASSERT_TRUE(saved.training.has_value());
  saved.training->algorithm = Algorithm::kAuto;
  const std::string path = TempPath("auto_state.corral");
  SaveModel(path, saved);
  try {
    LoadModel(path);
    FAIL() << "a training state naming auto was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("training state has algorithm 'auto'"));
  }
}

// The optimizer's name is checked like the algorithm's: an unknown one is a damaged file.
TEST(ModelFile, TrainingStateNamingAnUnknownOptimizerIsRefused) {
  SavedModel saved = ToSavedModel(Train(testing::SmallProblem().train, nullptr,
                                        {.threads = 1, .epochs = 1, .lr = 0.05f}));
  const std::string path = TempPath("optimizer_state.corral");
  SaveModel(path, saved);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  // Same length, so the header length stays right; the checksum is rewritten below.
  const std::size_t at = bytes.find(R"("optimizer":"sgd")");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 17, R"("optimizer":"nag")");
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
    hash ^= static_cast<unsigned char>(bytes[i]);
    hash *= 0x100000001b3ULL;
  }
  std::memcpy(bytes.data() + bytes.size() - 8, &hash, 8);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  try {
    LoadModel(path);
    FAIL() << "an unknown optimizer was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(path + ": not a usable corral model file: training "
                                               "state: unknown --optimizer 'nag' (expected one of: "
                                               "sgd, adagrad, momentum)"));
  }
}

TEST(ModelFile, MissingFileIsAnIoError) {
  try {
    LoadModel(TempPath("no-such-model.corral"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

}  // namespace
}  // namespace corral
