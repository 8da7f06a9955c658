// Resuming a checkpoint under other settings: refused with every difference named, never a
// run that reuses positions meant for another schedule (sync resumed at hogwild's positions
// waited at its barrier forever). Files from before topology and compressor were recorded
// still resume.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include <corral/corral.h>

namespace corral {
namespace {

class ResumeMismatch : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = MakeSyntheticClassification(
        {.rows = 600, .features = 40, .nnz_per_row = 6, .seed = 3}, 0);
    path_ = (std::filesystem::temp_directory_path() /
             ("resume_mismatch." + std::to_string(::getpid()) + ".model"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Saves a one-epoch run of `config` as the checkpoint.
  void Checkpoint(const TrainConfig& config) {
    SaveModel(path_, ToSavedModel(Train(data_.train, nullptr, config)));
  }
  // The message of resuming the checkpoint with `config`, or "" when it resumes; a refusal
  // must carry `code`.
  std::string Resume(TrainConfig config, ErrorCode code = ErrorCode::kBadConfig) {
    config.resume_path = path_;
    config.epochs = 2;
    try {
      Train(data_.train, nullptr, config);
      return "";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      return e.what();
    }
  }

  SyntheticSplit data_;
  std::string path_;
  const TrainConfig base_{.threads = 2, .epochs = 1, .lr = 0.1f};
};

TEST_F(ResumeMismatch, AnotherAlgorithmIsRefused) {
  Checkpoint(base_);
  TrainConfig sync = base_;
  sync.algorithm = Algorithm::kSync;
  const std::string why = Resume(sync);
  EXPECT_NE(why.find(path_ + ": cannot resume: the checkpoint was written with --algo hogwild "
                             "(this run: sync)"),
            std::string::npos) << why;
}

TEST_F(ResumeMismatch, OtherThreadsAndBatchAreRefusedTogether) {
  Checkpoint(base_);
  TrainConfig other = base_;
  other.threads = 1;
  other.batch = 4;
  const std::string why = Resume(other);
  EXPECT_NE(why.find("--threads 2 (this run: 1), --batch 1 (this run: 4)"), std::string::npos)
      << why;
}

TEST_F(ResumeMismatch, AnotherTopologyOrCompressorIsRefused) {
  TrainConfig ecd = base_;
  ecd.algorithm = Algorithm::kEcd;
  ecd.threads = 4;
  ecd.compress = "qsgd:8";
  Checkpoint(ecd);
  TrainConfig other = ecd;
  other.topology = "complete";
  other.compress = "qsgd:4";
  const std::string why = Resume(other);
  EXPECT_NE(why.find("--topology ring (this run: complete), --compress qsgd:8 (this run: qsgd:4)"),
            std::string::npos) << why;
}

TEST_F(ResumeMismatch, TheSameRunResumes) {
  Checkpoint(base_);
  EXPECT_EQ(Resume(base_), "");
}

TEST_F(ResumeMismatch, AFileWithoutTopologyAndCompressorStillResumes) {
  TrainConfig dpsgd = base_;
  dpsgd.algorithm = Algorithm::kDpsgd;
  dpsgd.threads = 4;
  SavedModel saved = ToSavedModel(Train(data_.train, nullptr, dpsgd));
  ASSERT_TRUE(saved.training);
  EXPECT_EQ(saved.training->topology, "ring");
  EXPECT_EQ(saved.training->compress, "none");
  saved.training->topology.reset();  // as an older corral wrote it
  saved.training->compress.reset();
  SaveModel(path_, saved);
  ASSERT_FALSE(LoadModel(path_).training->topology);
  TrainConfig other = dpsgd;
  other.topology = "complete";  // not recorded, so not compared
  EXPECT_EQ(Resume(other), "");
  TrainConfig local = dpsgd;
  local.algorithm = Algorithm::kLocal;  // recorded: still compared
  EXPECT_NE(Resume(local).find("--algo dpsgd (this run: local)"), std::string::npos);
}

TEST_F(ResumeMismatch, APositionBeyondTheEpochIsRefused) {
  SavedModel saved = ToSavedModel(Train(data_.train, nullptr, base_));
  ASSERT_TRUE(saved.training);
  saved.training->epochs_done = 0;
  saved.training->position = {5, 1'000'000};  // worker 1 owns about 300 rows
  SaveModel(path_, saved);
  const std::string why = Resume(base_, ErrorCode::kBadInput);
  EXPECT_NE(why.find(path_ + ": worker 1 resumes at sample 1000000 of an epoch of "),
            std::string::npos) << why;
}

TEST_F(ResumeMismatch, SyncWorkersAtDifferentStepsAreRefused) {
  TrainConfig sync = base_;
  sync.algorithm = Algorithm::kSync;
  SavedModel saved = ToSavedModel(Train(data_.train, nullptr, sync));
  ASSERT_TRUE(saved.training);
  saved.training->epochs_done = 0;
  saved.training->position = {10, 20};  // hogwild-like: sync would wait at its barrier forever
  SaveModel(path_, saved);
  const std::string why = Resume(sync, ErrorCode::kBadInput);
  EXPECT_NE(why.find(path_ + ": the workers' positions differ (10 and 20)"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace corral
