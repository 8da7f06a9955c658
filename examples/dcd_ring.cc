// Embedding Corral: DCD-PSGD (compressed gossip) on a ring, with a progress callback and an
// early stop decided by the program.
//
// The algorithm is chosen by the name the CLI takes (--algo): "dcd" here; "dpsgd" (full-precision
// gossip), "choco" or "ecd" take the same config, so switching is a one-word change below.
#include <cmath>
#include <cstdio>
#include <string>

#include <corral/corral.h>

int main() {
  try {
    const std::string algorithm = "dcd";
    corral::SyntheticSplit data = corral::MakeSyntheticClassification(
        {.rows = 16'000, .features = 500, .nnz_per_row = 10, .seed = 11}, 4'000);

    const corral::TrainConfig config{
        .algorithm = corral::ParseAlgorithm(algorithm),
        .threads = 4,
        .epochs = 30,
        .batch = 8,  // samples per step; a gossip round every few steps (gossip_every: auto)
        .compress = "qsgd:8",  // what dcd sends each round: 8-bit QSGD of its change
        .topology = "ring",
    };
    config.Validate();  // throws corral::Error naming the bad field, as the CLI would print it

    corral::TrainObserver observer;
    double previous = INFINITY;
    observer.on_eval = [&](const corral::EvalPoint& p) {
      std::printf("epoch %2d  objective %.5f  test accuracy %.4f  consensus %.2e  %.0f KB sent\n",
                  p.epoch, p.objective, p.test_acc.value_or(0), p.consensus.value_or(0),
                  static_cast<double>(p.bytes_sent) / 1e3);
      // Stop once an epoch improves the objective by less than 0.1%.
      const bool improving = p.objective < previous * (1 - 1e-3);
      previous = p.objective;
      return improving;
    };
    int progress_calls = 0;
    observer.on_progress = [&](const corral::Progress&) { ++progress_calls; };

    const corral::TrainResult result = corral::Train(data.train, &data.test, config, observer);
    std::printf("%s on a %s of %d workers: stopped by %s after %zu epochs (%d progress reports)\n",
                algorithm.c_str(), config.topology.c_str(), result.threads,
                std::string(corral::ToString(result.stop_reason)).c_str(), result.history.size(),
                progress_calls);
    return result.history.back().test_acc.value_or(0) > 0.8 ? 0 : 1;
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  }
}
