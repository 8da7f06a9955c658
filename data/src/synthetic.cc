// Synthetic classification and regression with planted linear models.
//
// Only corral::Rng and arithmetic are used (no <random> distributions, whose output differs
// between standard libraries), so a seed names the same data set everywhere.
//
// Random streams: stream 0 of the seed draws the model (w* and the popularity order), stream 1
// draws the rows, training rows first and test rows after them. So the training set does not
// depend on the number of test rows, and changing label_noise flips labels without moving any
// feature. The binary sparse case draws exactly what it always drew, so existing seeds keep
// naming the same data.
#include <corral/synthetic.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/limits.h>
#include <corral/rng.h>

#include "data/src/feature_sampler.h"

namespace corral {
namespace {

constexpr std::uint64_t kModelStream = 0;
constexpr std::uint64_t kRowStream = 1;

enum class Target { kBinary, kMulticlass, kRegression };

// Everything the row generator needs, from either public spec.
struct RowSpec {
  std::size_t rows, features, nnz_per_row;
  double zipf;
  bool dense;
  Target target;
  std::size_t classes;
  double noise;  // label-flip probability, or the regression noise's standard deviation
  std::uint64_t seed;
  const char* what;  // for error messages
};

[[noreturn]] void ThrowBadConfig(const RowSpec& spec, const std::string& what) {
  throw Error(ErrorCode::kBadConfig, std::string(spec.what) + ": " + what);
}

std::string Format(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

void Validate(const RowSpec& spec, std::size_t test_rows) {
  if (spec.features == 0) ThrowBadConfig(spec, "features is 0, expected at least 1");
  CheckFeatureCount(spec.features, ErrorCode::kBadConfig, spec.what);
  if (!spec.dense) {
    if (spec.nnz_per_row == 0) ThrowBadConfig(spec, "nnz_per_row is 0, expected at least 1");
    if (spec.nnz_per_row > spec.features) {
      ThrowBadConfig(spec, "nnz_per_row " + std::to_string(spec.nnz_per_row) +
                               " exceeds features " + std::to_string(spec.features) +
                               ", expected nnz_per_row <= features (indices in a row are "
                               "distinct)");
    }
    if (!(spec.zipf >= 0) || !std::isfinite(spec.zipf)) {
      ThrowBadConfig(spec, "zipf is " + Format(spec.zipf) +
                               ", expected a finite exponent >= 0 (0 = uniform)");
    }
  }
  if (spec.target == Target::kRegression) {
    if (!(spec.noise >= 0) || !std::isfinite(spec.noise)) {
      ThrowBadConfig(spec, "noise is " + Format(spec.noise) +
                               ", expected a finite standard deviation >= 0");
    }
  } else if (!(spec.noise >= 0 && spec.noise <= 1)) {
    ThrowBadConfig(spec, "label_noise is " + Format(spec.noise) +
                             ", expected a probability in [0, 1]");
  }
  if (spec.target == Target::kMulticlass &&
      (spec.classes < 3 || spec.classes > (std::size_t{1} << 24))) {
    ThrowBadConfig(spec, "classes is " + std::to_string(spec.classes) +
                             ", expected 2 .. 2^24 (class ids must be exact floats)");
  }
  // What Generate and the planted model allocate: per row its entries (index and value), offset
  // and label; per output and feature a double of w*, and the sampler's popularity order.
  const auto per_row = static_cast<double>(spec.dense ? spec.features : spec.nnz_per_row);
  const double all_rows = static_cast<double>(spec.rows) + static_cast<double>(test_rows);
  const double outputs = spec.target == Target::kMulticlass ? static_cast<double>(spec.classes) : 1;
  const double bytes = all_rows * (per_row * 8 + 12) + static_cast<double>(spec.features) * (outputs + 1) * 8;
  CheckMemory({bytes}, ErrorCode::kBadConfig,
              std::string(spec.what) + ": rows " + std::to_string(spec.rows) + " of " +
                  std::to_string(spec.dense ? spec.features : spec.nnz_per_row) + " entries",
              "the generated set");
}

// Standard normals by Box-Muller (both outputs used); u1 is in (0, 1] so log(u1) is finite.
std::vector<double> Normals(std::size_t count, Rng& rng) {
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - rng.Uniform()));
    const double angle = 2.0 * std::numbers::pi * rng.Uniform();
    out[i] = radius * std::cos(angle);
    if (i + 1 < count) out[i + 1] = radius * std::sin(angle);
  }
  return out;
}

double Normal(Rng& rng) { return Normals(1, rng)[0]; }

struct Rows {
  std::vector<std::uint64_t> row_ptr{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::vector<float> label;
};

class RowGenerator {
 public:
  RowGenerator(const RowSpec& spec, Rng& model_rng)
      : spec_(spec),
        outputs_(spec.target == Target::kMulticlass ? spec.classes : 1),
        w_(Normals(outputs_ * spec.features, model_rng)) {
    if (!spec.dense) {
      sampler_.emplace(spec.features, spec.nnz_per_row, spec.zipf, model_rng);
    }
  }

  const std::vector<double>& w() const { return w_; }

  Rows Generate(std::size_t rows, Rng& rng) {
    const std::size_t k = spec_.dense ? spec_.features : spec_.nnz_per_row;
    Rows out;
    out.row_ptr.resize(rows + 1);
    if (!spec_.dense) out.index.resize(rows * k);
    out.value.resize(rows * k);
    out.label.resize(rows);
    std::vector<double> raw(k);
    std::vector<double> margins(outputs_);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::span<float> value(out.value.data() + r * k, k);
      std::span<const std::uint32_t> index;
      if (spec_.dense) {
        const double scale = 1.0 / std::sqrt(static_cast<double>(k));
        raw = Normals(k, rng);
        for (std::size_t j = 0; j < k; ++j) value[j] = static_cast<float>(raw[j] * scale);
      } else {
        const std::span<std::uint32_t> picked(out.index.data() + r * k, k);
        sampler_->Sample(rng, picked);
        index = picked;
        // Values in (0, 1] rather than [0, 1): the same distribution up to a null set, and a
        // row can never have zero norm.
        double norm2 = 0;
        for (double& v : raw) {
          v = 1.0 - rng.Uniform();
          norm2 += v * v;
        }
        const double inv_norm = 1.0 / std::sqrt(norm2);
        for (std::size_t j = 0; j < k; ++j) value[j] = static_cast<float>(raw[j] * inv_norm);
      }
      // Margins from the stored values, so labels agree with the data as written.
      for (std::size_t c = 0; c < outputs_; ++c) {
        const double* wc = w_.data() + c * spec_.features;
        double m = 0;
        for (std::size_t j = 0; j < k; ++j) {
          m += wc[spec_.dense ? j : index[j]] * static_cast<double>(value[j]);
        }
        margins[c] = m;
      }
      out.label[r] = Label(margins, rng);
      out.row_ptr[r + 1] = (r + 1) * k;
    }
    return out;
  }

 private:
  float Label(const std::vector<double>& margins, Rng& rng) const {
    switch (spec_.target) {
      case Target::kBinary: {
        float label = margins[0] >= 0 ? 1.0f : -1.0f;
        if (rng.Uniform() < spec_.noise) label = -label;  // drawn even at 0 noise, see top
        return label;
      }
      case Target::kMulticlass: {
        auto label = static_cast<std::size_t>(
            std::max_element(margins.begin(), margins.end()) - margins.begin());
        if (rng.Uniform() < spec_.noise) {
          label = (label + 1 + rng.Below(spec_.classes - 1)) % spec_.classes;
        }
        return static_cast<float>(label);
      }
      case Target::kRegression:
        return static_cast<float>(margins[0] + spec_.noise * Normal(rng));
    }
    return 0;
  }

  RowSpec spec_;
  std::size_t outputs_;
  std::vector<double> w_;
  std::optional<detail::FeatureSampler> sampler_;
};

Dataset ToDataset(Rows rows, const RowSpec& spec, const std::string& name) {
  if (spec.dense) {
    return Dataset::Dense(std::move(rows.value), std::move(rows.label), spec.features, name);
  }
  return Dataset(std::move(rows.row_ptr), std::move(rows.index), std::move(rows.value),
                 std::move(rows.label), spec.features, name);
}

SyntheticSplit Make(const RowSpec& spec, std::size_t test_rows) {
  Validate(spec, test_rows);
  Rng model_rng(spec.seed, kModelStream);
  RowGenerator generator(spec, model_rng);
  Rng row_rng(spec.seed, kRowStream);
  Rows train = generator.Generate(spec.rows, row_rng);
  Rows test = generator.Generate(test_rows, row_rng);
  return {ToDataset(std::move(train), spec, "synthetic-train"),
          ToDataset(std::move(test), spec, "synthetic-test"),
          {generator.w().begin(), generator.w().end()}};
}

}  // namespace

SyntheticSplit MakeSyntheticClassification(const SyntheticSpec& spec, std::size_t test_rows) {
  return Make({.rows = spec.rows, .features = spec.features, .nnz_per_row = spec.nnz_per_row,
               .zipf = spec.zipf, .dense = spec.dense,
               .target = spec.classes == 2 ? Target::kBinary : Target::kMulticlass,
               .classes = spec.classes, .noise = spec.label_noise, .seed = spec.seed,
               .what = "synthetic classification"},
              test_rows);
}

SyntheticSplit MakeSyntheticRegression(const RegressionSpec& spec, std::size_t test_rows) {
  return Make({.rows = spec.rows, .features = spec.features, .nnz_per_row = spec.nnz_per_row,
               .zipf = spec.zipf, .dense = spec.dense, .target = Target::kRegression,
               .classes = 1, .noise = spec.noise, .seed = spec.seed,
               .what = "synthetic regression"},
              test_rows);
}

}  // namespace corral
