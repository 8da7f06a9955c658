// The per-worker state every shared-model mode starts from: the worker's shard of the rows,
// its visiting order, gradient buffers and random stream.
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/rng.h>
#include <corral/step.h>
#include <corral/train.h>

#include "engine/src/runtime/crew.h"
#include "engine/src/runtime/epoch_layout.h"
#include "engine/src/runtime/mode_state.h"

namespace corral::internal {

// Epoch e's random stream for worker w depends only on (seed, e, w): a resumed run replays the
// uninterrupted run's shuffles and rounding bit for bit without saving generator states.
inline Rng EpochRng(std::uint64_t seed, int epoch, int worker) {
  const std::uint64_t mixed = seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(epoch + 1));
  return Rng(mixed, static_cast<std::uint64_t>(worker) + 1);
}

// Worker w's contiguous share of `rows` rows.
inline std::size_t ShardBegin(std::size_t rows, int w, int workers) {
  return rows * static_cast<std::size_t>(w) / static_cast<std::size_t>(workers);
}

// The training rows this process holds: rows [first, first + the Dataset's rows) of a set of
// `total` rows. One process holds them all; across ranks a rank reading by rank holds its
// workers' rows only (docs/algorithms.md, "Data by rank"). Shards are cut from `total` by
// global worker id and read at (global row - first).
struct HeldRows {
  std::size_t first = 0;
  std::size_t total = 0;
};

// Samples in worker w's shard of `rows` rows: the epoch of a worker that walks its own shard
// once (hogwild, locked, buckwild, adpsgd, hogwild++).
inline std::uint64_t ShardLength(std::size_t rows, int w, int workers) {
  return ShardBegin(rows, w + 1, workers) - ShardBegin(rows, w, workers);
}

// Steps of `batch` samples that cover the longest of `workers` shards of `rows` rows: the
// epoch length of the modes whose workers step together (sync, the round-based replica modes;
// shorter shards wrap around).
inline std::size_t StepsPerEpoch(std::size_t rows, int workers, std::size_t batch) {
  std::size_t longest = 0;
  for (int w = 0; w < workers; ++w) {
    longest = std::max(longest, ShardBegin(rows, w + 1, workers) - ShardBegin(rows, w, workers));
  }
  return (longest + batch - 1) / batch;
}

// Asks the memory system for row r's label and weight ahead of use: in a shuffled epoch each is
// a cache miss the worker would wait for (the dense loops of buckwild and hogwild, whose
// kernels ask for the row itself: before this, three quarters or more of their time outside
// the kernels was on the label's load).
inline void PrefetchLabel(const Dataset& data, std::size_t r) {
  __builtin_prefetch(&data.labels()[r]);
  if (data.weighted()) __builtin_prefetch(&data.weights()[r]);
}

// Asks the memory system for row r's values, indices, label and weight ahead of use. A shuffled
// epoch visits rows in random order, so without this nearly every row is a cache miss the
// worker waits for; with it the miss overlaps the samples before it.
inline void PrefetchRow(const Dataset& data, std::size_t r) {
  const SparseRow row = data.Row(r);
  __builtin_prefetch(row.value.data());
  if (!data.is_dense()) __builtin_prefetch(row.index.data());
  PrefetchLabel(data, r);
}

// Thread safety: owner-only (built and used by its worker; the coordinator reads `position`,
// `samples` and the shuffle report only while the workers are parked between epochs).
template <typename M>
struct alignas(kCacheLine) ShardWorker {
  // The rows the mode reads, visited as shard[order[k]] for k = position, position + 1, ...:
  // with --shuffle index the worker's rows in storage order and `order` the epoch's
  // permutation; with epoch the layout's copy in that permutation and `order` the identity;
  // with off the stored rows and the identity. With epoch in windows (layout.windowed(), a
  // mode that asked for them through RunPlan::window_bytes) `order` stays the permutation and
  // the mode's loop reads the rows through layout.Window instead (HogwildSteps).
  Dataset shard;
  std::vector<std::uint32_t> order;
  EpochLayout layout;  // --shuffle epoch: the stored rows and the epoch's copy; else a shard copy
  Shuffle shuffle = Shuffle::kIndex;
  std::optional<typename M::Grad> grad;
  std::optional<typename M::Workspace> workspace;
  Rng rng;
  std::uint64_t samples = 0;   // samples processed in all epochs
  std::uint64_t position = 0;  // samples of the current epoch processed
  // --optimizer momentum (dense gradients): this worker's velocity and its factor mu; empty
  // under the other optimizers (StartMomentum).
  std::vector<float> velocity;
  float momentum = 0;

  // Under --optimizer momentum, a zero velocity as long as the model (a dense gradient).
  void StartMomentum(const TrainConfig& config, std::size_t params) {
    if (config.optimizer != Optimizer::kMomentum) return;
    velocity.assign(params, 0.0f);
    momentum = config.momentum;
  }
  // Worker w's velocity in the mode's training state (mode_state.h), when it keeps one: saved
  // into checkpoints and restored on resume, so that the heavy ball rolls on.
  void VisitVelocity(StateVisitor& v, int w) {
    if (!velocity.empty()) v.Floats(Key("velocity", w), velocity);
  }
  // The step of `grad` on `w`: corral/step.h's ApplyStep, or its momentum form.
  void ApplyGradient(Params w, float eta) {
    if constexpr (std::is_same_v<typename M::Grad, DenseGrad>) {
      if (!velocity.empty()) {
        ApplyMomentumStep(w, *grad, velocity, eta, momentum);
        return;
      }
    }
    ApplyStep(w, *grad, eta);
  }

  // On the worker's own thread (first touch puts the shard on its NUMA node). A mode that
  // reads its rows only through `shard` and `order` passes the run's --shuffle; index (the
  // default) is right for any mode. `copy` (RunPlan::copy_shards): the shard is a copy (in
  // huge pages, as the layout's, unless epoch re-lays it out), else a view of `train`'s rows.
  // `held`: which rows of the whole set `train` holds (w and workers are global).
  // `window_bytes` (epoch only; 0: the whole shard): the copy as a window of that size.
  void Build(const M& model, const Dataset& train, HeldRows held, int w, int workers,
             std::size_t batch, Shuffle visiting, bool copy, std::uint64_t window_bytes = 0) {
    const std::size_t begin = ShardBegin(held.total, w, workers) - held.first;
    const std::size_t end = ShardBegin(held.total, w + 1, workers) - held.first;
    shuffle = visiting;
    const bool epoch = shuffle == Shuffle::kEpoch;
    shard = copy && epoch ? train.Slice(begin, end) : train.Rows(begin, end);
    order.resize(shard.rows());
    grad.emplace(model.MakeGrad(shard, batch));
    workspace.emplace(model.MakeWorkspace(batch));
    if (epoch && window_bytes > 0) {
      layout.BuildWindow(shard, window_bytes);
      shard = layout.view();
    } else if (epoch || copy) {
      // index and off with a copy: the layout's arrays, in huge pages (fewer TLB misses when
      // rows are read in random order: 8 KB rows, 1 thread, 0.98M -> 1.19M samples/s), never
      // permuted.
      layout.Build(shard);
      shard = layout.view();
    }
  }

  // A fresh visiting order for epoch `epoch`, starting `start` samples in (resume). With
  // `halt`, the copy (--shuffle epoch) stops early once it is set: the caller must then take
  // no step (the rows are laid out only in part).
  void BeginEpoch(std::uint64_t seed, int epoch, int w, std::uint64_t start,
                  const std::atomic<bool>* halt = nullptr) {
    DrawOrder(seed, epoch, w);
    // Only epoch's copy is permuted: under index and off the layout may hold a plain shard copy.
    if (shuffle == Shuffle::kEpoch && layout.active() && !layout.windowed()) {
      layout.Permute(order, halt);
      std::iota(order.begin(), order.end(), 0u);
    }
    position = start;
  }

  // `order` := epoch `epoch`'s permutation of the stored rows (identity under --shuffle off)
  // and `rng` the epoch's stream after drawing it, as --shuffle index has always drawn them.
  void DrawOrder(std::uint64_t seed, int epoch, int w) {
    std::iota(order.begin(), order.end(), 0u);
    rng = EpochRng(seed, epoch, w);
    if (shuffle != Shuffle::kOff) rng.Shuffle(std::span(order));
  }

  // The rows this worker reads every step (under --shuffle epoch the epoch copy): the memory
  // Placement::BindLocal puts on the worker's NUMA node.
  std::vector<std::span<const std::byte>> OwnedMemory() const {
    std::vector<std::span<const std::byte>> areas{std::as_bytes(shard.value()), std::as_bytes(shard.labels())};
    if (!shard.is_dense()) {
      areas.push_back(std::as_bytes(shard.row_ptr()));
      areas.push_back(std::as_bytes(shard.index()));
    }
    return areas;
  }

  // The extra memory --shuffle epoch takes for this worker (0 otherwise).
  std::uint64_t ShuffleCopyBytes() const { return shuffle == Shuffle::kEpoch ? layout.CopyBytes() : 0; }
};

// A mode's per-worker states, one per worker, and what the coordinator reads of them while the
// workers are parked: positions, samples, and sums and maxima (bytes, clocks).
// Thread safety: during an epoch each worker touches only its own state; the rest is
// coordinator-only, while the workers are parked.
template <typename State>  // with `position` and `samples`, as ShardWorker
class WorkerSet {
 public:
  explicit WorkerSet(int workers) : states_(static_cast<std::size_t>(workers)) {}

  State& operator[](std::integral auto w) { return states_[static_cast<std::size_t>(w)]; }
  const State& operator[](std::integral auto w) const { return states_[static_cast<std::size_t>(w)]; }
  std::size_t size() const { return states_.size(); }
  bool empty() const { return states_.empty(); }
  auto begin() { return states_.begin(); }
  auto end() { return states_.end(); }
  auto begin() const { return states_.begin(); }
  auto end() const { return states_.end(); }

  // Samples of the current epoch worker w has processed.
  std::uint64_t Position(int w) const { return (*this)[w].position; }
  // Worker w's own memory: its rows and, for a replica mode's state, its replica `x`.
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const {
    const State& s = (*this)[w];
    std::vector<std::span<const std::byte>> areas = s.OwnedMemory();
    if constexpr (requires { s.x.data(); }) areas.push_back(std::as_bytes(std::span(s.x)));
    return areas;
  }
  // Samples processed by all workers in all epochs.
  std::uint64_t Samples() const {
    return Sum([](const State& s) { return s.samples; });
  }
  // The sum and the largest of f(state) over the workers (0 when there are none).
  template <typename F>
  auto Sum(F f) const {
    decltype(f(states_.front())) total{};
    for (const State& s : states_) total += f(s);
    return total;
  }
  // The visiting order the workers used and the memory their epoch copies took (--shuffle).
  std::pair<Shuffle, std::uint64_t> Shuffling() const {
    if (states_.empty()) return {Shuffle::kIndex, 0};
    return {states_.front().shuffle, Sum([](const State& s) { return s.ShuffleCopyBytes(); })};
  }
  template <typename F>
  auto Max(F f) const {
    decltype(f(states_.front())) most{};
    for (const State& s : states_) most = std::max(most, f(s));
    return most;
  }

 private:
  std::vector<State> states_;
};

}  // namespace corral::internal
