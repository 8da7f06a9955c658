// `corral data stats|convert|gen`: inspect, cache and generate datasets (DESIGN.md §9).
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <corral/cache.h>
#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/limits.h>
#include <corral/load.h>
#include <corral/stats.h>
#include <corral/synthetic.h>
#include <corral/write.h>

#include "commands.h"

namespace corral::cli {
namespace {

struct DataOptions {
  std::string data, out, format = "auto", truth;
  std::size_t features = 0;
  int threads = 0;
  bool json = false;
  bool zero_based = false;
  SyntheticSpec classification{.rows = 10'000, .features = 1'000};
  RegressionSpec regression{.rows = 10'000, .features = 1'000};
  RatingsSpec ratings;
};

// Shortest exact text of a float ("1", "-1", "0.5"): JSON keys and plain output alike.
std::string FloatText(float x) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, x);
  return std::string(text, end);
}

LoadOptions ToLoadOptions(const DataOptions& o) {
  CheckFeatureCount(o.features, ErrorCode::kBadConfig, "--features");
  return {.format = ParseDataFormat(o.format), .num_features = o.features,
          .zero_based = o.zero_based, .threads = o.threads};
}

void AddLoadOptions(CLI::App* cmd, DataOptions& o) {
  cmd->add_option("--data", o.data, "Data file")->required();
  AddFormatOption(cmd, o.format);
  cmd->add_option("--features", o.features, "Feature dimension (default: the file's own)");
  cmd->add_option("--threads", o.threads, "Parsing threads (0 = all hardware threads)")
      ->capture_default_str();
  cmd->add_flag("--zero-based", o.zero_based, "LIBSVM indices start at 0");
}

int RunStats(const DataOptions& o) {
  const LoadOptions options = ToLoadOptions(o);
  const DataFormat format =
      options.format == DataFormat::kAuto ? DetectFormat(o.data) : options.format;
  const Dataset d = LoadDataset(o.data, options);
  const DatasetStats s = ComputeStats(d);
  nlohmann::ordered_json j;
  j["path"] = o.data;
  j["format"] = std::string(DataFormatName(format));
  j["rows"] = s.rows;
  j["features"] = s.features;
  j["nnz"] = s.nnz;
  j["dense"] = s.dense;
  j["row_nnz"] = {{"min", s.min_row_nnz}, {"mean", s.mean_row_nnz}, {"max", s.max_row_nnz}};
  if (s.label_counts.empty()) {
    j["labels"] = nullptr;  // more distinct labels than a table is useful for: see the summary
  } else {
    nlohmann::ordered_json labels = nlohmann::ordered_json::object();
    for (const auto& [label, count] : s.label_counts) labels[FloatText(label)] = count;
    j["labels"] = labels;
  }
  j["distinct_labels"] = s.distinct_labels;
  j["label_summary"] = {{"min", s.label_min}, {"max", s.label_max}, {"mean", s.label_mean},
                        {"stddev", s.label_stddev}};
  if (d.ratings() != nullptr) {
    j["users"] = s.users;
    j["items"] = s.items;
  }
  if (o.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s (%s%s)\n", o.data.c_str(), std::string(DataFormatName(format)).c_str(),
              s.dense ? ", dense" : "");
  std::printf("rows      %zu\nfeatures  %zu\nnnz       %zu (per row: min %zu, mean %.2f, max %zu)\n",
              s.rows, s.features, s.nnz, s.min_row_nnz, s.mean_row_nnz, s.max_row_nnz);
  if (d.ratings() != nullptr) std::printf("users     %zu\nitems     %zu\n", s.users, s.items);
  std::printf("labels    %zu distinct (min %g, max %g, mean %g, stddev %g)\n", s.distinct_labels,
              static_cast<double>(s.label_min), static_cast<double>(s.label_max), s.label_mean,
              s.label_stddev);
  for (const auto& [label, count] : s.label_counts) {
    std::printf("  %-8s %zu\n", FloatText(label).c_str(), count);
  }
  return 0;
}


// The planted model as text: a '#' line naming its shape, then one row of floats per line.
void WriteTruth(const std::string& path, const std::string& header, std::span<const float> values,
                std::size_t per_line) {
  std::ofstream out(path);
  out << "# " << header << "\n";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out << FloatText(values[i]) << ((i + 1) % per_line == 0 ? '\n' : ' ');
  }
  out.flush();
  if (!out) throw Error(ErrorCode::kIo, path + ": cannot write the planted model");
}

void Report(const std::string& path, const CacheSummary& s) {
  std::fprintf(stderr, "wrote %s: %zu rows, %zu features, %zu stored values\n", path.c_str(),
               s.rows, s.num_features, s.nnz);
}
void Report(const std::string& path, const Dataset& d) {
  Report(path, {.rows = d.rows(), .num_features = d.num_features(), .nnz = d.nnz()});
}

// Streamed for LIBSVM and CSV (ConvertToCache): memory holds a piece, not the data set.
int RunConvert(const DataOptions& o) {
  Report(o.out, ConvertToCache(o.data, o.out, ToLoadOptions(o)));
  return 0;
}

int RunGenClassification(const DataOptions& o) {
  const SyntheticSpec& spec = o.classification;
  const SyntheticSplit split = MakeSyntheticClassification(spec, 0);
  WriteDataset(split.train, o.out);
  Report(o.out, split.train);
  if (!o.truth.empty()) {
    const std::size_t outputs = spec.classes > 2 ? spec.classes : 1;
    WriteTruth(o.truth,
               "corral planted model: classification, " + std::to_string(outputs) +
                   " weight vector(s) of " + std::to_string(spec.features) +
                   " features, one per line" +
                   (outputs > 1 ? " (label = argmax_c <w_c, x>)" : " (label = sign <w, x>)"),
               split.truth, spec.features);
  }
  return 0;
}

int RunGenRegression(const DataOptions& o) {
  const SyntheticSplit split = MakeSyntheticRegression(o.regression, 0);
  WriteDataset(split.train, o.out);
  Report(o.out, split.train);
  if (!o.truth.empty()) {
    WriteTruth(o.truth,
               "corral planted model: regression, y = <w, x> + noise; w has " +
                   std::to_string(o.regression.features) + " features",
               split.truth, o.regression.features);
  }
  return 0;
}

int RunGenRatings(const DataOptions& o) {
  const RatingsSpec& spec = o.ratings;
  const SyntheticRatings r = MakeSyntheticRatings(spec);
  WriteDataset(r.train, o.out);
  Report(o.out, r.train);
  if (spec.test_fraction > 0) {
    const std::string test_path = o.out + ".test";
    WriteDataset(r.test, test_path);
    Report(test_path, r.test);
  }
  if (!o.truth.empty()) {
    std::vector<float> factors = r.user_factors;
    factors.insert(factors.end(), r.item_factors.begin(), r.item_factors.end());
    WriteTruth(o.truth,
               "corral planted model: ratings = " + FloatText(r.mean) +
                   " + <u, v> + noise; rank " + std::to_string(spec.rank) + "; " +
                   std::to_string(spec.users) + " user lines (ids 1..), then " +
                   std::to_string(spec.items) + " item lines (ids 1..)",
               factors, spec.rank);
  }
  return 0;
}

void AddGenCommands(CLI::App* gen, DataOptions& o, std::string& which) {
  gen->require_subcommand(1);
  {
    SyntheticSpec& s = o.classification;
    CLI::App* cmd = gen->add_subcommand("classification", "Sparse or dense classification");
    cmd->add_option("--rows", s.rows, "Rows")->required();
    cmd->add_option("--features", s.features, "Features")->required();
    CLI::Option* nnz = cmd->add_option("--nnz-per-row", s.nnz_per_row, "Non-zeros per row")
                           ->capture_default_str();
    cmd->add_flag("--dense", s.dense, "Every feature in every row")->excludes(nnz);
    cmd->add_option("--zipf", s.zipf, "Feature popularity exponent (0 = uniform)")
        ->capture_default_str();
    cmd->add_option("--noise", s.label_noise, "Label noise probability")->capture_default_str();
    cmd->add_option("--classes", s.classes, "Classes (2: labels -1/+1; more: 0..C-1)")
        ->capture_default_str();
    cmd->add_option("--seed", s.seed, "Random seed")->capture_default_str();
    cmd->add_option("--truth", o.truth, "Write the planted model to this file");
    cmd->add_option("--out", o.out, "Output (.cache: binary cache, else LIBSVM text)")->required();
    cmd->callback([&which] { which = "classification"; });
  }
  {
    RatingsSpec& s = o.ratings;
    CLI::App* cmd = gen->add_subcommand("ratings", "Low-rank ratings");
    cmd->add_option("--users", s.users, "Users")->required();
    cmd->add_option("--items", s.items, "Items")->required();
    cmd->add_option("--rank", s.rank, "Rank of the planted factors")->required();
    cmd->add_option("--ratings", s.ratings, "Ratings (distinct user-item pairs)")->required();
    cmd->add_option("--noise", s.noise, "Rating noise standard deviation")->capture_default_str();
    cmd->add_option("--test-fraction", s.test_fraction, "Fraction written to OUT.test")
        ->capture_default_str();
    cmd->add_option("--seed", s.seed, "Random seed")->capture_default_str();
    cmd->add_option("--truth", o.truth, "Write the planted factors to this file");
    cmd->add_option("--out", o.out, "Output (.cache: binary cache, else `user item rating` TSV)")
        ->required();
    cmd->callback([&which] { which = "ratings"; });
  }
  {
    RegressionSpec& s = o.regression;
    CLI::App* cmd = gen->add_subcommand("regression", "Sparse or dense linear regression");
    cmd->add_option("--rows", s.rows, "Rows")->required();
    cmd->add_option("--features", s.features, "Features")->required();
    CLI::Option* nnz = cmd->add_option("--nnz-per-row", s.nnz_per_row, "Non-zeros per row")
                           ->capture_default_str();
    cmd->add_flag("--dense", s.dense, "Every feature in every row")->excludes(nnz);
    cmd->add_option("--noise", s.noise, "Target noise standard deviation")->capture_default_str();
    cmd->add_option("--seed", s.seed, "Random seed")->capture_default_str();
    cmd->add_option("--truth", o.truth, "Write the planted model to this file");
    cmd->add_option("--out", o.out, "Output (.cache: binary cache, else LIBSVM text)")->required();
    cmd->callback([&which] { which = "regression"; });
  }
}

}  // namespace

Action AddDataCommand(CLI::App& app) {
  auto o = std::make_shared<DataOptions>();
  auto which = std::make_shared<std::string>();
  CLI::App* data = app.add_subcommand("data", "Inspect, convert and generate datasets");
  data->require_subcommand(1);

  CLI::App* stats = data->add_subcommand("stats", "Rows, features, non-zeros and labels");
  AddLoadOptions(stats, *o);
  stats->add_flag("--json", o->json, "Print one JSON object");
  stats->callback([which] { *which = "stats"; });

  CLI::App* convert = data->add_subcommand(
      "convert", "Write the binary cache of a data file (LIBSVM and CSV streamed in " +
                     std::to_string(kConvertPieceBytes >> 20) + " MiB pieces)");
  AddLoadOptions(convert, *o);
  convert->add_option("--out", o->out, "Cache file to write")->required();
  convert->callback([which] { *which = "convert"; });

  AddGenCommands(data->add_subcommand("gen", "Generate synthetic data with a planted model"), *o,
                 *which);

  return [o, which]() -> int {
    if (*which == "stats") return RunStats(*o);
    if (*which == "convert") return RunConvert(*o);
    if (*which == "classification") return RunGenClassification(*o);
    if (*which == "regression") return RunGenRegression(*o);
    if (*which == "ratings") return RunGenRatings(*o);
    return 2;
  };
}

}  // namespace corral::cli
