// Embedding Corral: a recommender, matrix factorisation of a ratings file.
//
//   example_recommender_mf [ratings.txt [test.txt]]
//
// Lines are `user item rating [timestamp]` (MovieLens style). Without arguments it writes a
// small low-rank ratings file to the temporary directory and uses that. Shows loading ratings
// with their id mapping, training, saving and loading the model, and predicting a rating.
#include <cstdio>
#include <filesystem>
#include <string>

#include <corral/corral.h>

int main(int argc, char** argv) {
  try {
    std::string train_path, test_path;
    if (argc > 1) {
      train_path = argv[1];
      if (argc > 2) test_path = argv[2];
    } else {
      const std::filesystem::path dir = std::filesystem::temp_directory_path();
      train_path = (dir / "corral_example_ratings.txt").string();
      test_path = train_path + ".test";
      const corral::SyntheticRatings gen = corral::MakeSyntheticRatings(
          {.users = 300, .items = 200, .rank = 5, .ratings = 30'000, .test_fraction = 0.1, .seed = 9});
      corral::WriteRatings(gen.train, train_path);
      corral::WriteRatings(gen.test, test_path);
    }
    const corral::Dataset train = corral::LoadDataset(train_path, {.format = corral::DataFormat::kRatings});
    corral::Dataset test;
    if (!test_path.empty()) {
      // The train set's ids, so a user keeps their dense id in both sets.
      test = corral::LoadDataset(test_path, {.format = corral::DataFormat::kRatings,
                                             .ratings_mapping = train.ratings_shared()});
    }

    const corral::TrainConfig config{.algorithm = corral::Algorithm::kHogwild,
                                     .model = corral::ParseModel("mf"), .threads = 2,
                                     .epochs = 15, .rank = 5};
    const corral::TrainResult result =
        corral::Train(train, test.rows() > 0 ? &test : nullptr, config);
    const corral::EvalPoint& last = result.history.back();
    std::printf("train RMSE %.3f, test RMSE %.3f after %d epochs\n", last.train_rmse.value_or(0),
                last.test_rmse.value_or(0), last.epoch);

    // Save, load back, and predict user 0's rating of item 0 (dense ids; file ids via info).
    const std::string model_path = train_path + ".model";
    corral::SaveModel(model_path, corral::ToSavedModel(result));
    const corral::SavedModel saved = corral::LoadModel(model_path);
    const corral::ModelInfo& info = saved.info;
    const corral::MfModel mf(info.users, info.items, info.rank, info.mean, info.l2);
    std::printf("user %llu would rate item %llu: %.2f\n",
                static_cast<unsigned long long>(info.user_ids[0]),
                static_cast<unsigned long long>(info.item_ids[0]),
                static_cast<double>(mf.Predict(saved.params, 0, 0)));
    if (test.rows() > 0) {
      std::printf("loaded model: test RMSE %.3f\n", corral::EvaluateModel(saved, test).rmse.value_or(0));
    }
    std::filesystem::remove(model_path);
    return 0;
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.IsUsageError() ? 2 : 1;
  }
}
