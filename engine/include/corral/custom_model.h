/// \file
/// Training a model of your own: a loss and its gradient, per sample, over a flat parameter
/// vector. The engine brings everything else (threads, every algorithm but buckwild, step
/// sizes, L2, evaluation, callbacks, snapshots).
///
///   struct Huber {                      // satisfies corral::CustomModel
///     std::size_t dim;
///     std::size_t NumParams() const { return dim; }
///     float Predict(const corral::Params& w, const corral::SparseRow& x) const;
///     double Loss(const corral::Params& w, const corral::SparseRow& x, float y) const;
///     void AddGradient(const corral::Params& w, const corral::SparseRow& x, float y,
///                      std::span<float> grad) const;
///   };
///   corral::TrainResult r = corral::TrainCustom(Huber{train.num_features()}, train, &test, cfg);
///
/// Why a concept in front of a virtual interface: the engine is compiled once, inside the
/// library, against internal headers (oneTBB among them) that must not reach an embedder's
/// build. TrainCustom checks the concept (with one readable message per missing member),
/// wraps the model in a small virtual adapter and hands it to the compiled engine. The cost is
/// one virtual call per sample and a dense gradient buffer per worker (zeroed each step), so
/// it suits models whose gradient touches most parameters; the built-in models keep their
/// sparse, fused paths.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include <corral/dataset.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/rng.h>
#include <corral/train.h>

namespace corral {

/// What TrainCustom asks of a user's model `M` (all members const, thread-safe for concurrent
/// calls: every worker calls them at once):
///  - `std::size_t NumParams()`: the length of the parameter vector.
///  - `float Predict(const Params& w, const SparseRow& x)`: the model's output for one row.
///  - `double Loss(const Params& w, const SparseRow& x, float y)`: the data loss of one row.
///  - `void AddGradient(const Params& w, const SparseRow& x, float y, std::span<float> grad)`:
///    adds d Loss(w, x, y) / dw into `grad` (NumParams() floats; do not clear it).
/// Optional:
///  - `static constexpr corral::Task kTask`: kRegression (the default: RMSE of Predict is
///    reported), kBinary (Predict is a score; its sign is the class, labels > 0 positive) or
///    kMulticlass (Predict returns the class label).
///  - `void Init(std::span<float> w, Rng& rng)`: initial parameters (default: zeros).
/// Read parameters only through `w` (relaxed atomic loads: under hogwild other workers write
/// them concurrently). The L2 term (TrainConfig::l2, default 1/rows) is added by the engine:
/// objective = mean Loss + (l2/2)|w|^2. After training, wrap the result to predict:
/// `model.Predict(corral::Params(std::span(result.params)), row)`.
template <typename M>
concept CustomModel = requires(const M& m, const Params& w, const SparseRow& x, float y,
                               std::span<float> grad) {
  { m.NumParams() } -> std::convertible_to<std::size_t>;
  { m.Predict(w, x) } -> std::convertible_to<float>;
  { m.Loss(w, x, y) } -> std::convertible_to<double>;
  m.AddGradient(w, x, y, grad);
};

namespace detail {

/// The type-erased form of a CustomModel the compiled engine trains. Not for direct use:
/// call TrainCustom. Thread safety: all members are called concurrently by every worker.
class CustomModelBase {
 public:
  virtual ~CustomModelBase() = default;
  virtual Task task() const = 0;
  virtual std::size_t NumParams() const = 0;
  virtual void Init(std::span<float> w, Rng& rng) const = 0;
  virtual float Predict(const Params& w, const SparseRow& x) const = 0;
  virtual double Loss(const Params& w, const SparseRow& x, float y) const = 0;
  virtual void AddGradient(const Params& w, const SparseRow& x, float y,
                           std::span<float> grad) const = 0;
};

/// Forwards CustomModelBase's calls to a CustomModel (which it references, not copies).
template <CustomModel M>
class CustomModelAdapter final : public CustomModelBase {
 public:
  explicit CustomModelAdapter(const M& model) : model_(model) {}
  Task task() const override {
    if constexpr (requires { M::kTask; }) {
      return M::kTask;
    } else {
      return Task::kRegression;
    }
  }
  std::size_t NumParams() const override { return static_cast<std::size_t>(model_.NumParams()); }
  void Init(std::span<float> w, Rng& rng) const override {
    if constexpr (requires { model_.Init(w, rng); }) {
      model_.Init(w, rng);
    } else {
      for (float& v : w) v = 0.0f;
    }
  }
  float Predict(const Params& w, const SparseRow& x) const override {
    return static_cast<float>(model_.Predict(w, x));
  }
  double Loss(const Params& w, const SparseRow& x, float y) const override {
    return static_cast<double>(model_.Loss(w, x, y));
  }
  void AddGradient(const Params& w, const SparseRow& x, float y,
                   std::span<float> grad) const override {
    model_.AddGradient(w, x, y, grad);
  }

 private:
  const M& model_;
};

/// The compiled engine's entry for custom models (see TrainCustom).
TrainResult TrainCustomModel(const CustomModelBase& model, const Dataset& train,
                             const Dataset* test, const TrainConfig& config,
                             const TrainObserver& observer);

}  // namespace detail

/// Trains a user-defined model (see CustomModel) exactly as Train trains a built-in one: same
/// config, observer, stopping rules, metrics and errors. `config.model` is ignored;
/// `config.algorithm` may be anything but buckwild, and `config.resume_path` must be empty
/// (both throw corral::Error kBadConfig). result.params holds the trained parameters;
/// result.model describes only their count and the L2 strength (SaveModel files of custom
/// models cannot be read back by `corral eval`). Blocks until done.
template <typename M>
TrainResult TrainCustom(const M& model, const Dataset& train, const Dataset* test,
                        const TrainConfig& config, const TrainObserver& observer = {}) {
  static_assert(requires(const M& m) {
    { m.NumParams() } -> std::convertible_to<std::size_t>;
  }, "corral::TrainCustom: the model needs `std::size_t NumParams() const` "
     "(see corral::CustomModel in <corral/custom_model.h>)");
  static_assert(requires(const M& m, const Params& w, const SparseRow& x) {
    { m.Predict(w, x) } -> std::convertible_to<float>;
  }, "corral::TrainCustom: the model needs `float Predict(const corral::Params&, "
     "const corral::SparseRow&) const` (see corral::CustomModel)");
  static_assert(requires(const M& m, const Params& w, const SparseRow& x, float y) {
    { m.Loss(w, x, y) } -> std::convertible_to<double>;
  }, "corral::TrainCustom: the model needs `double Loss(const corral::Params&, "
     "const corral::SparseRow&, float label) const` (see corral::CustomModel)");
  static_assert(requires(const M& m, const Params& w, const SparseRow& x, float y,
                         std::span<float> g) { m.AddGradient(w, x, y, g); },
                "corral::TrainCustom: the model needs `void AddGradient(const corral::Params&, "
                "const corral::SparseRow&, float label, std::span<float> grad) const` "
                "(see corral::CustomModel)");
  if constexpr (CustomModel<M>) {
    return detail::TrainCustomModel(detail::CustomModelAdapter<M>(model), train, test, config,
                                    observer);
  } else {
    return {};  // unreachable: a static_assert above has failed
  }
}

}  // namespace corral
