// SIGKILL at a random moment of saving a model never leaves a damaged or missing file where a
// previous one existed: a child saves two different models in turn, as fast as it can (every
// moment of it is inside SaveModel, the code behind --save); the parent kills it after a
// random delay of up to three saves, 60 times, and each time the file must load and be one of
// the two models. Temporary files the killed writer left beside it are counted and removed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <corral/corral.h>

namespace corral {
namespace {

SavedModel Filled(std::size_t features, float value) {
  SavedModel m;
  m.info = {.kind = ModelKind::kLogistic, .l2 = 1e-3f, .num_features = features};
  m.params.assign(features, value);
  return m;
}

TEST(KillDuringSave, NeverLeavesADamagedOrMissingModel) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kill_save." + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.model").string();
  // 512k parameters (2 MB): a save takes milliseconds, so most kills land inside one.
  const SavedModel a = Filled(std::size_t{1} << 19, 1.0f);
  const SavedModel b = Filled(std::size_t{1} << 19, 2.0f);
  const auto began = std::chrono::steady_clock::now();
  SaveModel(path, a);  // the previous file
  const auto save_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - began).count();

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<long> delay_us(0, 3 * save_us);
  constexpr int kKills = 60;
  int leftovers = 0;
  for (int kill_no = 0; kill_no < kKills; ++kill_no) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        for (int n = 0;; ++n) SaveModel(path, n % 2 == 0 ? b : a);
      } catch (...) {
        _exit(3);  // never back into the test
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the saver ended by itself";

    SavedModel loaded;
    ASSERT_NO_THROW(loaded = LoadModel(path)) << "after kill " << kill_no + 1;
    ASSERT_TRUE(loaded.params == a.params || loaded.params == b.params) << "after kill " << kill_no + 1;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename() != "m.model") {
        EXPECT_TRUE(entry.path().filename().string().starts_with(".m.model.tmp."))
            << entry.path();
        fs::remove(entry.path());
        ++leftovers;
      }
    }
  }
  std::printf("%d kills over saves of %ld us, %d left a temporary file behind (removed)\n", kKills,
              static_cast<long>(save_us), leftovers);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace corral
