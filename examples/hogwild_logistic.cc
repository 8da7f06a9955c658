// Embedding Corral: HOGWILD! logistic regression from C++.
//
//   example_hogwild_logistic [train.svm [test.svm]]
//
// Without arguments it trains on a generated problem. Shows loading data, configuring a run,
// watching it through a callback, and reading the trained model.
#include <cstdio>
#include <optional>

#include <corral/corral.h>

int main(int argc, char** argv) {
  try {
    corral::Dataset train, test;
    if (argc > 1) {
      train = corral::ReadLibsvm(argv[1]);
      if (argc > 2) test = corral::ReadLibsvm(argv[2], {.num_features = train.num_features()});
    } else {
      corral::SyntheticSplit split = corral::MakeSyntheticClassification(
          {.rows = 20'000, .features = 1'000, .nnz_per_row = 15, .seed = 3}, 5'000);
      train = std::move(split.train);
      test = std::move(split.test);
    }

    const corral::TrainConfig config{
        .algorithm = corral::Algorithm::kHogwild,
        .threads = 2,
        .epochs = 10,
    };
    corral::TrainObserver observer;
    observer.on_eval = [](const corral::EvalPoint& p) {
      std::printf("epoch %2d  objective %.5f  test accuracy %.4f\n", p.epoch, p.objective,
                  p.test_acc.value_or(0.0));
      return true;  // false would stop training here
    };
    const corral::TrainResult result =
        corral::Train(train, test.rows() > 0 ? &test : nullptr, config, observer);

    // The trained weights are a flat vector; a model object scores new rows with them.
    const corral::LogisticModel model(train.num_features(), result.l2);
    const float p = model.Predict(result.params, train.Row(0));
    std::printf("%.0f samples/s; P(y=+1 | first row) = %.3f (label %g)\n", result.samples_per_s,
                static_cast<double>(p), static_cast<double>(train.Label(0)));
    return 0;
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  }
}
