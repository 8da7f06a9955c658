// A worker whose model throws: every mode stops all its workers (no hang, also when the
// others wait at a sync barrier) and reports the error after the join, as kWorkerFailed.
// White-box: a throwing model goes straight into the engine's runner (custom models reach the
// public API with the embedding issue).
#include <atomic>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include <corral/corral.h>

#include "engine/src/modes/hogwild.h"
#include "engine/src/modes/sync_sgd.h"
#include "test_data.h"
#include "throwing_model.h"

namespace corral {
namespace {

using testing::ThrowingModel;

template <typename Mode>
void ExpectWorkerFailure(Algorithm algorithm, int threads) {
  const SyntheticSplit data = testing::SmallProblem();
  std::atomic<int> calls{0};
  const ThrowingModel model(data.train, 2500, calls);
  const TrainConfig config{.algorithm = algorithm, .threads = threads, .epochs = 20, .lr = 0.1f};
  bool searched = false;
  internal::RunPlan plan = internal::PlanRun(model, data.train, config, threads, 1, searched);
  try {
    internal::Coordinate<ThrowingModel, Mode>(model, nullptr, std::move(plan), searched, 1e-3f, {});
    FAIL() << "expected the worker's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kWorkerFailed);
    EXPECT_NE(std::string(e.what()).find("boom in the model"), std::string::npos) << e.what();
  }
  // The run stopped soon after the failure instead of finishing its 20 epochs.
  EXPECT_LT(calls.load(), 20 * 3000 / 2);
}

TEST(WorkerFailure, HogwildStopsAndReports) {
  ExpectWorkerFailure<internal::HogwildMode<ThrowingModel, false>>(Algorithm::kHogwild, 4);
}
TEST(WorkerFailure, LockedStopsAndReports) {
  ExpectWorkerFailure<internal::HogwildMode<ThrowingModel, true>>(Algorithm::kLocked, 4);
}
TEST(WorkerFailure, SyncStopsAndReportsWithoutLeavingOthersAtTheBarrier) {
  ExpectWorkerFailure<internal::SyncMode<ThrowingModel>>(Algorithm::kSync, 4);
}
TEST(WorkerFailure, QsgdStopsAndReports) {
  ExpectWorkerFailure<internal::SyncMode<ThrowingModel>>(Algorithm::kQsgd, 3);
}

}  // namespace
}  // namespace corral
