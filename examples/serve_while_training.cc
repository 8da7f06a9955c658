// Embedding Corral: answer predictions from the model while it trains.
//
// One thread trains (HOGWILD!); this thread serves: it takes snapshots of the running model
// (corral::LiveModel) and scores held-out rows with them, and cancels training from here once
// the served model is good enough (TrainObserver::stop).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stop_token>
#include <thread>
#include <vector>

#include <corral/corral.h>

int main() {
  try {
    corral::SyntheticSplit data = corral::MakeSyntheticClassification(
        {.rows = 50'000, .features = 2'000, .nnz_per_row = 20, .seed = 5}, 5'000);
    const corral::TrainConfig config{.algorithm = corral::Algorithm::kHogwild, .threads = 2,
                                     .epochs = 100, .lr = 0.1f};

    corral::LiveModel live;
    std::stop_source cancel;
    std::atomic<bool> finished{false};  // W: trainer once; R: server; release/acquire: result
    corral::TrainResult result;
    std::jthread trainer([&] {
      result = corral::Train(data.train, nullptr, config, {.stop = cancel.get_token(), .live = &live});
      finished.store(true, std::memory_order_release);
    });

    const corral::LogisticModel scorer(data.train.num_features(), 0.0f);
    std::vector<float> w;
    int served = 0;
    double accuracy = 0;
    while (!finished.load(std::memory_order_acquire)) {
      if (live.Snapshot(w)) {  // false until the run has started
        std::size_t right = 0;
        for (std::size_t r = 0; r < data.test.rows(); ++r) {
          const bool positive = scorer.Predict(w, data.test.Row(r)) > 0.5f;
          right += positive == (data.test.Label(r) > 0) ? 1 : 0;
        }
        accuracy = static_cast<double>(right) / static_cast<double>(data.test.rows());
        if (++served % 10 == 0) std::printf("snapshot %d: held-out accuracy %.4f\n", served, accuracy);
        if (accuracy > 0.85) cancel.request_stop();  // good enough: stop training
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    trainer.join();
    std::printf("served %d snapshots (last accuracy %.4f); training stopped by %s after %zu epochs\n",
                served, accuracy, std::string(corral::ToString(result.stop_reason)).c_str(),
                result.history.size());
    live.Snapshot(w);  // after the run: its final model
    return w == result.params ? 0 : 1;
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  }
}
