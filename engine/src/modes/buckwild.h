// Over 300 lines: one mode whose fixed-point kernels (dense and sparse rows, each split into
// the read and the write that --schedule seeded applies apart) belong beside its grid.
// Buckwild! (De Sa et al. 2015, "Taming the Wild"): HOGWILD! on low-precision numbers.
//
// The dataset's values (D) and the shared model (T) are int8 or int16 fixed point with one scale
// each (`--bits` for the data, `--model-bits` for the model) (DMGC: the dataset's precision is where a dense problem's memory traffic goes; 8-bit
// values move a quarter of fp32's bytes). An update t is rounded back onto the model's grid
// either stochastically, unbiased (E = t, so steps smaller than a quantum still move the
// model on average), or to nearest, which loses every step below half a quantum
// (`--rounding nearest`). Sparse rows compute t in float and round floor(t + u), u ~ U[0,1)
// from the worker's Rng; dense rows round in fixed point with a per-worker xorshift, and with
// int8 data compute t in integers under stochastic rounding (buckwild_kernels.h, FixedStep).
//
// Races: as in HOGWILD!, workers read and write the shared model without locks. The model is
// an array of 64-bit words (8 int8 or 4 int16 coordinates each), every access a relaxed
// std::atomic_ref<uint64_t> load or store (coordinates are moved in and out with memcpy, so no
// type punning). The dense kernels (buckwild_kernels.h) read and write blocks of 16
// coordinates with one vector instruction each, with the same per-coordinate guarantee. A
// dense step reads the model twice, for its dot product and for its update, as HOGWILD!'s float
// step does (linear_step.h). A sparse update of one
// coordinate stores its whole word, so it may also undo a concurrent update of a neighbour in
// that word: a lost update of the kind HOGWILD!'s analysis allows (no read-modify-write atomics).
// Linear models only (logistic, hinge, squared), as in the paper.
//
// Under --schedule seeded:TAU (seeded_schedule.h) a step splits in two: its coefficient
// eta * loss'(margin) is computed from the model when the step is taken, and the update is
// written (rounded with the computing worker's stream) when it is due.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include <corral/linear.h>
#include <corral/step.h>

#include "engine/src/modes/buckwild_kernels.h"
#include "engine/src/modes/seeded_schedule.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/huge_pages.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

using buckwild::kGridMax;

// D: the dataset's values, T: the model's.
template <Model M, typename D, typename T>
class BuckwildMode;

template <typename Loss, typename D, typename T>
class BuckwildMode<LinearModel<Loss>, D, T> {
  using M = LinearModel<Loss>;
  static_assert(std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int16_t>);
  static_assert(std::is_same_v<D, std::int8_t> || std::is_same_v<D, std::int16_t>);
  static constexpr std::size_t kPerWord = sizeof(std::uint64_t) / sizeof(T);

 public:
  BuckwildMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), stochastic_(plan.config.rounding == Rounding::kStochastic),
        words_(buckwild::PaddedLength(model.NumParams()) / kPerWord, 0),
        workers_(plan.threads) {
    if (plan.config.seeded_tau) schedule_.emplace(*plan.config.seeded_tau, plan.threads, PendingStep{});
    // Data scale: the largest |x| lands on the grid's end.
    float x_max = 0;
    for (const float v : plan.train.value()) x_max = std::max(x_max, std::abs(v));
    x_scale_ = x_max > 0 ? x_max / kGridMax<D> : 1.0f;
    // Model scale: twice the largest weight a short fp32 probe reaches (or the resumed model
    // has), so the grid covers the optimum with room to move.
    float w_max = 0;
    for (const float v : plan.initial) w_max = std::max(w_max, std::abs(v));
    if (w_max == 0) w_max = ProbeWeightScale();
    w_scale_ = 2 * w_max / kGridMax<T>;
    Rng rng(plan.config.seed, 0xb0c);
    std::vector<T> grid(words_.size() * kPerWord, 0);
    for (std::size_t u = 0; u < plan.initial.size(); ++u) {
      grid[u] = Round<T>(plan.initial[u] / w_scale_, rng.UniformFloat());
    }
    std::memcpy(words_.data(), grid.data(), grid.size() * sizeof(T));  // before the workers start
  }

  void Setup(int w) {
    State& self = workers_[static_cast<std::size_t>(w)];
    const Dataset& train = plan_.train;
    self.shard = train.Slice(ShardBegin(train.rows(), w, plan_.threads),
                             ShardBegin(train.rows(), w + 1, plan_.threads));
    self.order.resize(self.shard.rows());
    // The worker quantizes its own shard (first touch: NUMA-local), rounding as configured.
    // Dense rows are padded with zeros to whole blocks of the dense kernels.
    Rng rng = EpochRng(plan_.config.seed, -1, w);
    const std::span<const float> value = self.shard.value();
    if (!self.shard.is_dense()) {
      self.values.resize(value.size());
      for (std::size_t k = 0; k < self.values.size(); ++k) {
        self.values[k] = Round<D>(value[k] / x_scale_, rng.UniformFloat());
      }
      return;
    }
    const std::size_t d = model_.NumParams(), stride = buckwild::PaddedLength(d);
    self.values.assign(self.shard.rows() * stride, 0);
    for (std::size_t r = 0; r < self.shard.rows(); ++r) {
      const std::span<const float> row = self.shard.DenseRow(r);
      for (std::size_t j = 0; j < std::min(row.size(), d); ++j) {
        self.values[r * stride + j] = Round<D>(row[j] / x_scale_, rng.UniformFloat());
      }
    }
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    if (schedule_) {
      if (w == 0) SeededEpoch(epoch, start, steps);  // every worker's steps (seeded_schedule.h)
      return;
    }
    State& self = workers_[static_cast<std::size_t>(w)];
    self.BeginEpoch(plan_.config.seed, epoch, w, start);
    self.stream.Seed(self.rng);
    const float eta = plan_.EpochLr(epoch);
    std::optional<std::int64_t> margin_sum;  // dense rows: the next step's, from this one's update
    for (std::size_t k = start; k < self.order.size(); ++k) {
      if (halt_.load(std::memory_order_relaxed)) break;
      if (self.shard.is_dense()) {
        margin_sum = DenseStep(self, k, margin_sum, eta);
      } else {
        SparseStep(self, self.order[k], eta);
      }
      ++self.samples;
      self.position = k + 1;
      if ((self.samples & 255) == 0) steps.store(self.samples, std::memory_order_relaxed);
    }
    steps.store(self.samples, std::memory_order_relaxed);  // progress display only
  }

  std::uint64_t Position(int w) const { return workers_.Position(w); }
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const { return workers_.OwnedMemory(w); }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.held.total, w, plan_.threads); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  // The shared model read with relaxed atomic loads: safe beside the workers (LiveModel).
  static constexpr bool kSnapshotWhileRunning = true;
  void Snapshot(std::span<float> out) const {
    for (std::size_t u = 0; u < out.size(); ++u) {
      out[u] = static_cast<float>(Get(u)) * w_scale_;
    }
  }
  std::uint64_t BytesSent() const { return 0; }
  std::uint64_t BytesSentMax() const { return 0; }

  void Describe(TrainResult& r) const {
    if (schedule_) schedule_->Describe(r, plan_.threads, "each update rounded when applied");
  }

  // Its training state (mode_state.h): the model on its grid (each value a small integer, exact
  // in a float), the grid's scale and the rescales so far (they seed the rescale's rounding).
  // Resumed from the float parameters alone, the model would be rounded onto a new grid.
  void VisitState(StateVisitor& v) {
    std::vector<float> grid(model_.NumParams());
    for (std::size_t u = 0; u < grid.size(); ++u) grid[u] = static_cast<float>(Get(u));
    v.Floats("grid", grid);
    v.Real("w_scale", w_scale_);
    v.Count("rescales", rescales_);
    if (schedule_) schedule_->VisitState(v);
    if (!v.loading()) return;
    for (std::size_t u = 0; u < grid.size(); ++u) {
      const float g = std::isfinite(grid[u]) ? std::clamp(grid[u], -kGridMax<T>, kGridMax<T>) : 0.0f;
      Put(u, static_cast<T>(g));
    }
  }

  // Dynamic fixed point, between epochs (workers parked): if coordinates reached the grid's
  // end the model outgrew its scale, so double the scale (halving every value with the run's
  // rounding); if the largest value uses under a quarter of the grid, halve the scale
  // (doubling every value, exactly). The probe's first scale is a guess from 10,000 rows;
  // the optimum of a weakly regularised problem can be several times larger.
  void EndEpoch() {
    const std::size_t d = model_.NumParams();
    std::vector<T> grid(words_.size() * kPerWord);
    std::memcpy(grid.data(), words_.data(), grid.size() * sizeof(T));
    std::size_t saturated = 0;
    float largest = 0;
    for (std::size_t u = 0; u < d; ++u) {
      const float v = std::abs(static_cast<float>(grid[u]));
      saturated += v >= kGridMax<T> ? 1 : 0;
      largest = std::max(largest, v);
    }
    float factor = 1;
    if (saturated > 0) {
      factor = 0.5f;
    } else if (largest > 0 && largest < kGridMax<T> / 4) {
      factor = 2;
    }
    if (factor == 1) return;
    w_scale_ /= factor;
    Rng rng(plan_.config.seed, 0xb0c + ++rescales_);
    for (std::size_t u = 0; u < d; ++u) {
      grid[u] = Round<T>(static_cast<float>(grid[u]) * factor, rng.UniformFloat());
    }
    std::memcpy(words_.data(), grid.data(), grid.size() * sizeof(T));
  }

 private:
  // A seeded step between its computing and its applying: worker, row and coefficient.
  struct PendingStep {
    std::uint32_t worker = 0;
    std::uint32_t row = 0;
    float c = 0;
  };

  void SeededEpoch(int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    for (int v = 0; v < plan_.threads; ++v) {
      State& self = workers_[v];
      self.BeginEpoch(plan_.config.seed, epoch, v, SeededStart(plan_, v, epoch, start));
      self.stream.Seed(self.rng);
    }
    const float eta = plan_.EpochLr(epoch);
    const bool dense = plan_.train.is_dense();
    schedule_->RunEpoch(
        plan_.config.seed, epoch, workers_, 1, halt_, steps,
        [&](int v, std::span<const std::uint32_t> rows, PendingStep& p) {
          State& self = workers_[v];
          float c = 0;
          if (dense) {
            c = DenseCoefficient(self, rows[0], DenseMarginSum(self, rows[0], rows[0]), eta);
          } else {
            c = SparseCoefficient(self, rows[0], eta);
          }
          p = {static_cast<std::uint32_t>(v), rows[0], c};
        },
        [&](const PendingStep& p) {
          State& self = workers_[p.worker];
          if (dense) {
            DenseUpdate(self, p.row, p.c, eta);
          } else {
            SparseUpdate(self, p.row, p.c, eta);
          }
        });
  }

  struct State : ShardWorker<M> {
    // The shard's values on the data grid (index and labels from `shard`), dense rows padded to
    // whole blocks; in huge pages (huge_pages.h): rows visited in random order miss the TLB far
    // less (standalone, 2,000 int8 values a row: 0.81-0.86 -> 0.69-0.73 us a step).
    HugeVector<D> values;
    buckwild::RoundingStream stream;  // the dense kernels' random numbers
  };

  // t (in quanta) onto V's grid, clamped to the grid's range.
  template <typename V>
  V Round(float t, float u) const {
    const float r = std::floor(t + (stochastic_ ? u : 0.5f));
    return static_cast<V>(std::clamp(r, -kGridMax<V>, kGridMax<V>));
  }

  std::uint64_t LoadWord(std::size_t i) const {
    // const_cast: atomic_ref needs a non-const object; a load does not modify it.
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(words_[i]))
        .load(std::memory_order_relaxed);
  }
  void StoreWord(std::size_t i, std::uint64_t word) {
    std::atomic_ref<std::uint64_t>(words_[i]).store(word, std::memory_order_relaxed);
  }
  T Get(std::size_t u) const {
    const std::uint64_t word = LoadWord(u / kPerWord);
    T v;
    std::memcpy(&v, reinterpret_cast<const char*>(&word) + (u % kPerWord) * sizeof(T), sizeof v);
    return v;
  }
  void Put(std::size_t u, T v) {
    std::uint64_t word = LoadWord(u / kPerWord);
    std::memcpy(reinterpret_cast<char*>(&word) + (u % kPerWord) * sizeof(T), &v, sizeof v);
    StoreWord(u / kPerWord, word);
  }

  // One serial fp32 pass over up to 10,000 rows at the run's step size: the weights' size.
  float ProbeWeightScale() const {
    std::vector<float> w(model_.NumParams(), 0.0f);
    const Params p(w);
    SparseGrad g(plan_.train.max_row_nnz());
    typename M::Workspace ws;
    const std::size_t rows = std::min<std::size_t>(plan_.train.rows(), 10'000);
    for (std::uint32_t r = 0; r < rows; ++r) {
      model_.Gradient(p, plan_.train, std::span<const std::uint32_t>(&r, 1), g, ws);
      ApplyStep(p, g, plan_.lr);
    }
    float w_max = 0;
    for (const float v : w) w_max = std::max(w_max, std::abs(v));
    return w_max > 0 ? w_max : 1.0f;
  }

  // Dense rows, through buckwild_kernels.h (the shared model in blocks of 16 coordinates),
  // asm or word by word as the build allows.
  static constexpr bool kAsm = detail::kWideAsm;
  std::size_t Blocks() const { return words_.size() / buckwild::kWordsPerBlock<T>; }
  const D* DenseValues(const State& self, std::uint32_t r) const {
    return self.values.data() + static_cast<std::size_t>(r) * Blocks() * buckwild::kBlock;
  }
  // How many steps ahead a dense step asks for a row (DenseUpdate's `ahead`). Two steps of the
  // AVX-512 kernel were too few for a row to arrive (standalone, 2,000 int8 values a row, rows
  // from memory in random order: 240-270 ns a step asking 2 rows ahead, 191-216 asking 3 or 4,
  // 156 with the rows in cache; in the CLI five ran at 0.93x of three).
  static constexpr std::size_t kRowsAhead = 3;
  // Step k of the epoch's order on a dense row. `sum`: its margin's sum, when the step before
  // computed it (buckwild::DenseUpdate's `next`), else summed here. Returns the next step's.
  std::optional<std::int64_t> DenseStep(State& self, std::size_t k, std::optional<std::int64_t> sum, float eta) {
    const std::vector<std::uint32_t>& order = self.order;
    const std::uint32_t r = order[k];
    const std::uint32_t next = k + 1 < order.size() ? order[k + 1] : r;
    const std::uint32_t ahead = order[std::min(k + kRowsAhead, order.size() - 1)];
    PrefetchLabel(self.shard, ahead);  // its row: DenseUpdate's `ahead`
    if (!sum) sum = DenseMarginSum(self, r, next);
    const float c = DenseCoefficient(self, r, *sum, eta);
    if (k + 1 == order.size()) {
      DenseUpdate(self, r, c, eta);
      return std::nullopt;
    }
    return DenseUpdate(self, r, c, eta, next, ahead);
  }
  // Row r's margin on the model's and the data's grids (buckwild::DenseDot), `ahead` asked for
  // meanwhile.
  std::int64_t DenseMarginSum(const State& self, std::uint32_t r, std::uint32_t ahead) const {
    return buckwild::DenseDot<kAsm, T>(words_.data(), DenseValues(self, r), Blocks(), DenseValues(self, ahead));
  }
  // Row r's eta * loss'(margin) in quanta of the model per quantum of the data, from its
  // margin's sum on the grids.
  float DenseCoefficient(const State& self, std::uint32_t r, std::int64_t sum, float eta) const {
    const float margin = static_cast<float>(sum) * x_scale_ * w_scale_;
    const float dm = model_.Derivative(margin, self.shard.Label(r), self.shard.Weight(r));
    return eta * dm * x_scale_ / w_scale_;
  }
  // The shared model moved by row r's step with coefficient c, rounded onto the grid; with a
  // row `next`, returns its margin's sum from the updated blocks (`ahead` asked for meanwhile).
  // In quanta: t = (q - eta*dm*x) / (1 + eta*l2), the proximal step of step.h (d_u = n).
  std::int64_t DenseUpdate(State& self, std::uint32_t r, float c, float eta,
                           std::optional<std::uint32_t> next = std::nullopt, std::uint32_t ahead = 0) {
    return buckwild::DenseUpdate<kAsm, T>(words_.data(), DenseValues(self, r), Blocks(), c,
                                          ProximalShrink(eta, model_.L2Weight(0)),
                                          stochastic_ ? &self.stream : nullptr,
                                          next ? DenseValues(self, *next) : nullptr, DenseValues(self, ahead));
  }

  // Sparse rows: per-coordinate relaxed loads and stores of the touched coordinates.
  void SparseStep(State& self, std::uint32_t r, float eta) {
    SparseUpdate(self, r, SparseCoefficient(self, r, eta), eta);
  }
  // Row r's eta * loss'(margin), as DenseCoefficient, from the shared model.
  float SparseCoefficient(const State& self, std::uint32_t r, float eta) const {
    const SparseRow row = self.shard.Row(r);
    const std::uint64_t begin = self.shard.row_ptr()[r];
    std::int64_t dot = 0;  // exact, as the dense kernels' (buckwild_kernels.h)
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      const std::uint32_t u = row.index[k];
      if (u >= model_.NumParams()) continue;
      dot += std::int64_t{Get(u)} * self.values[begin + k];
    }
    const float margin = static_cast<float>(dot) * x_scale_ * w_scale_;
    return eta * model_.Derivative(margin, self.shard.Label(r), self.shard.Weight(r)) * x_scale_ / w_scale_;
  }
  // Row r's coordinates moved by its step with coefficient c, each rounded onto the grid.
  void SparseUpdate(State& self, std::uint32_t r, float c, float eta) {
    const SparseRow row = self.shard.Row(r);
    const std::uint64_t begin = self.shard.row_ptr()[r];
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      const std::uint32_t u = row.index[k];
      if (u >= model_.NumParams()) continue;
      const float t = (static_cast<float>(Get(u)) - c * static_cast<float>(self.values[begin + k])) /
                      (1.0f + eta * model_.L2Weight(u));
      Put(u, Round<T>(t, self.rng.UniformFloat()));
    }
  }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  bool stochastic_;
  float x_scale_ = 1;
  float w_scale_ = 1;
  std::uint64_t rescales_ = 0;
  // The shared model on its grid: coordinate u is the (u % kPerWord)-th T in word u / kPerWord.
  // W/R: every worker (relaxed, see the top); the coordinator between epochs.
  std::vector<std::uint64_t> words_;
  WorkerSet<State> workers_;
  std::optional<SeededSchedule<PendingStep>> schedule_;  // --schedule seeded: the delay queue
};

}  // namespace corral::internal
