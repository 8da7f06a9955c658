// The compressed synchronous replica modes under RunShared (DESIGN.md §2): DCD-PSGD, ECD-PSGD
// (Tang et al. 2018, Alg. 1 and 2) and CHOCO-SGD (Koloskova et al. 2019). Rounds, halting,
// failures, virtual time and resume at epoch boundaries work as in ReplicaMode (dpsgd.h),
// whose header explains them; only what a worker keeps and sends differs. A worker encodes
// one message per round and sends the same bytes to all its recipients; every decode of those
// bytes (the sender's own included) gives bit-identical values.
//
// Per worker i, with d parameters (memories first-touched by the owner in Setup):
//   dcd   x_i (== xh_i: the owner's copy of its own replica), xh_j per neighbour.
//           x_half = sum_j W_ij xh_j - eta g_i(x_i); z = x_half - x_i; send Q(z);
//           x_i += Q(z); on receipt xh_j += Q(z_j).        Needs --gossip-every 1.
//   ecd   x_i, yh_i and yh_j per neighbour; round t = 1, 2, ...
//           x_i(t+1) = sum_j W_ij yh_j(t) - eta g_i(x_i(t));
//           z = (1 - t/2) x_i(t) + (t/2) x_i(t+1), computed as x_i(t) + (t/2)(x_i(t+1) - x_i(t))
//           (the written form cancels two terms of size t|x| in float); send Q(z);
//           yh_j(t+1) = (1 - 2/t) yh_j(t) + (2/t) Q(z_j) for self and neighbours.
//   choco x_i, xh_i and s_i = sum_j W_ij xh_j (so O(1) vectors, whatever the degree), in the
//         order of the paper's CHOCO-SGD (Koloskova et al. 2019, Alg. 2; the s_i form is
//         Koloskova et al. 2020, Alg. 1):
//           x_i -= eta g_i(x_i); q_i = Q(x_i - xh_i); send q_i; xh_i += q_i;
//           s_i += sum_j W_ij q_j (self included); x_i += gamma (s_i - xh_i).
//         An unbiased codec is used as the rescaled operator delta Q (compressor.h), so every
//         q is applied with DecodeAdd's scale delta. Steps between rounds (--gossip-every K)
//         are the gradient step alone.
// Every worker knows the starting point x0, so all memories start at x0 (choco: s_i = x0) and
// the first message is already a difference. The relative compression error |Q(z) - z| / |z|
// of the operator applied (choco: delta Q) is averaged over an epoch's messages.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/params.h>
#include <corral/step.h>
#include <corral/topology.h>

#include "engine/src/channel/link.h"
#include "engine/src/channel/shm_transport.h"
#include "engine/src/compress/compressor.h"
#include "engine/src/modes/compressed_gossip_setup.h"
#include "engine/src/modes/dpsgd.h"
#include "engine/src/gossip/gossip_round.h"
#include "engine/src/runtime/live.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/shard_worker.h"

namespace corral::internal {

template <typename M>
class CompressedGossipMode {
 public:
  CompressedGossipMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt), algo_(plan.config.algorithm),
        topology_(MakeTopology(plan.config.topology, plan.threads,
                               {.groups = NumaGroups(plan.worker_numa)})),
        gossip_every_(static_cast<std::uint64_t>(plan.config.gossip_every)),
        link_mode_(ParseLinkMode(plan.config.link_mode)),
        dim_(model.NumParams()),
        workers_(static_cast<std::size_t>(plan.threads)) {
    if (!plan.config.link.empty()) link_ = ParseLinkSpec(plan.config.link);
    const std::unique_ptr<Compressor> codec = MakeCompressor(ResolvedCompress(plan.config), dim_);
    settled_ = PlanCompressedGossip(plan.config, topology_, *codec, dim_);
    scale_ = algo_ == Algorithm::kChoco && codec->unbiased() ? static_cast<float>(codec->Delta(dim_)) : 1.0f;
    wire_bytes_ = codec->WireBytes(dim_);
    if (wire_bytes_ > (std::size_t{1} << 31)) {
      throw Error(ErrorCode::kBadConfig, std::string(Name()) + ": a message of " +
                                             std::to_string(wire_bytes_) +
                                             " bytes exceeds the transport's 2 GiB limit");
    }
    transport_ = std::make_unique<ShmTransport>(
        ShmTransportConfig{.workers = plan.threads,
                           .edges = GossipEdges(topology_),
                           .max_payload_bytes = static_cast<std::uint32_t>(wire_bytes_),
                           .link_mode = link_mode_});
    std::size_t longest = 0;
    for (int w = 0; w < plan.threads; ++w) {
      longest = std::max(longest, ShardBegin(plan.train.rows(), w + 1, plan.threads) -
                                      ShardBegin(plan.train.rows(), w, plan.threads));
    }
    steps_per_epoch_ = (longest + Batch() - 1) / Batch();
    if (plan.live) tap_.Init(plan.threads, dim_);
  }

  void Setup(int w) {
    State& self = Worker(w);
    self.Build(model_, plan_.train, w, plan_.threads, Batch());
    self.rows.resize(Batch());
    const std::size_t degree = topology_.Neighbours(w).size();
    // First touch on the owner's thread: every memory is NUMA-local.
    const auto fresh = [&](std::vector<float>& v) { v.assign(plan_.initial.begin(), plan_.initial.end()); };
    fresh(self.x);
    self.z.assign(dim_, 0.0f);
    self.q.assign(dim_, 0.0f);
    if (algo_ != Algorithm::kChoco) {
      self.mixed.assign(dim_, 0.0f);
      self.hats.resize(degree);
      for (std::vector<float>& h : self.hats) fresh(h);
      for (const std::vector<float>& h : self.hats) self.hat_ptrs.push_back(h.data());
    }
    if (algo_ != Algorithm::kDcd) fresh(self.self_hat);
    if (algo_ == Algorithm::kChoco) fresh(self.sum_hat);
    self.wire.resize(wire_bytes_);
    self.codec = MakeCompressor(ResolvedCompress(plan_.config), dim_);
    self.held.reserve(degree);
    self.sources.reserve(degree + 1);
    self.link.emplace(link_, plan_.threads);
    transport_->Bind(w);
    if (tap_.active()) tap_.Park(w, self.x);
  }

  void Epoch(int w, int epoch, std::uint64_t /*start: see dpsgd.h*/,
             std::atomic<std::uint64_t>& steps) {
    State& self = Worker(w);
    if (tap_.active()) tap_.Unpark(w);
    try {
      RunEpoch(self, w, epoch, steps);
    } catch (...) {
      transport_->Abort();  // wake the neighbours waiting for this worker's messages
      if (tap_.active()) tap_.Park(w, self.x);
      throw;
    }
    if (tap_.active()) tap_.Park(w, self.x);
  }

  // As ReplicaMode: a partial epoch (halt) reports 0 for everyone.
  std::uint64_t Position(int w) const {
    for (const State& s : workers_) {
      if (s.position < EpochLength(w)) return 0;
    }
    return Worker(w).position;
  }
  std::uint64_t EpochLength(int /*w*/) const { return steps_per_epoch_ * Batch(); }
  std::uint64_t Samples() const {
    std::uint64_t total = 0;
    for (const State& s : workers_) total += s.steps;
    return total;
  }
  void Snapshot(std::span<float> out) const {
    std::vector<double> mean(out.size());
    MeanOf(Replicas(), mean);
    for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u]);
  }
  // The replicas' mean while the workers run (LiveModel): see ReplicaMode::LiveSnapshot.
  void LiveSnapshot(std::span<float> out) {
    tap_.Collect([&](std::span<const std::span<const float>> replicas) {
      std::vector<double> mean(out.size());
      MeanOf(replicas, mean);
      for (std::size_t u = 0; u < out.size(); ++u) out[u] = static_cast<float>(mean[u]);
    });
  }
  double Consensus() const { return ConsensusDistance(Replicas()); }
  std::optional<double> VirtualSeconds() const {
    if (link_mode_ == LinkMode::kRealtime) return std::nullopt;
    double most = 0;
    for (const State& s : workers_) most = std::max(most, s.time.clock);
    return most;
  }
  std::uint64_t BytesSent() const {
    std::uint64_t total = 0;
    for (int w = 0; w < plan_.threads; ++w) total += transport_->sent_by(w).bytes;
    return total;
  }
  std::uint64_t BytesSentMax() const {
    std::uint64_t most = 0;
    for (int w = 0; w < plan_.threads; ++w) most = std::max(most, transport_->sent_by(w).bytes);
    return most;
  }
  // The mean of |Q(z) - z| / |z| over the messages since the last call (zero vectors skipped);
  // nullopt when none was sent. Coordinator only, while the workers are parked.
  std::optional<double> CompressRelError() {
    double sum = 0;
    std::uint64_t count = 0;
    for (State& s : workers_) {
      sum += s.error_sum;
      count += s.error_count;
      s.error_sum = 0;
      s.error_count = 0;
    }
    if (count == 0) return std::nullopt;
    return sum / static_cast<double>(count);
  }
  // The run's warnings and CHOCO's gamma, into the result.
  void Report(TrainResult& result) const {
    result.warnings.insert(result.warnings.end(), settled_.warnings.begin(), settled_.warnings.end());
    result.gamma = settled_.gamma;
  }

  // White-box views for tests, valid while the workers are parked. Replica(w) may be written
  // from Setup (tests start from different replicas).
  std::span<float> Replica(int w) { return Worker(w).x; }
  // dcd: w's copy xh_j of its k-th neighbour's replica (Neighbours(w) order); ecd: yh_j.
  std::span<const float> NeighbourMemory(int w, std::size_t k) const { return Worker(w).hats[k]; }
  // ecd: yh_i; choco: xh_i.
  std::span<const float> OwnMemory(int w) const { return Worker(w).self_hat; }
  // choco: s_i.
  std::span<const float> MixedMemory(int w) const { return Worker(w).sum_hat; }
  const Topology& topology() const { return topology_; }
  double gamma() const { return settled_.gamma; }
  std::uint64_t RoundsDone() const { return workers_.empty() ? 0 : workers_[0].round; }

 private:
  // Thread safety: owner-only during an epoch; the coordinator reads it while parked.
  struct State : ShardWorker<M> {
    std::vector<float> x;                  // the replica x_i
    std::vector<float> mixed;              // dcd: x_half; ecd: x_i(t+1)
    std::vector<float> z;                  // the vector compressed this round
    std::vector<float> q;                  // the applied Q(z), for the error measurement
    std::vector<float> self_hat;           // ecd: yh_i; choco: xh_i
    std::vector<float> sum_hat;            // choco: s_i
    std::vector<std::vector<float>> hats;  // dcd, ecd: per neighbour, Neighbours(w) order
    std::vector<const float*> hat_ptrs;    // hats' data, for the mixing row
    std::vector<std::byte> wire;           // this round's message
    std::unique_ptr<Compressor> codec;     // own instance: ef: keeps per-sender state
    std::vector<std::uint32_t> rows;       // this step's mini-batch
    std::vector<Message> held;             // this round's messages, until applied
    std::vector<MixSource> sources;        // this round's mixing row
    std::optional<LinkModel> link;         // this worker's sends
    RoundClock time;
    std::uint64_t step = 0;                // steps taken in all epochs (equal on all workers)
    std::uint64_t round = 0;               // rounds done (equal on all workers)
    double error_sum = 0;                  // relative errors since the coordinator last read
    std::uint64_t error_count = 0;
  };

  const char* Name() const { return algo_ == Algorithm::kDcd ? "dcd" : algo_ == Algorithm::kEcd ? "ecd" : "choco"; }

  void RunEpoch(State& self, int w, int epoch, std::atomic<std::uint64_t>& steps) {
    self.BeginEpoch(plan_.config.seed, epoch, w, 0);
    const float eta = plan_.EpochLr(epoch);
    const std::size_t batch = Batch();
    const std::size_t rows = self.order.size();
    self.time.cpu_mark = ThreadCpuSeconds();
    for (std::size_t s = 0; s < steps_per_epoch_; ++s) {
      if (halt_.load(std::memory_order_relaxed)) {
        transport_->Abort();  // no neighbour may wait for a round this worker will not send
        break;
      }
      if (tap_.active()) tap_.Poll(w, self.x);  // a snapshot request: one copy of x_i
      for (std::size_t j = 0; j < batch; ++j) self.rows[j] = self.order[(s * batch + j) % rows];
      model_.Gradient(Params(self.x), self.shard, std::span<const std::uint32_t>(self.rows),
                      *self.grad, *self.workspace);
      bool ok = true;
      if (algo_ == Algorithm::kChoco) {
        ApplyStep(Params(self.x), *self.grad, eta);
        if ((self.step + 1) % gossip_every_ == 0) ok = ChocoRound(self, w);
      } else {
        ok = algo_ == Algorithm::kDcd ? DcdRound(self, w, eta) : EcdRound(self, w, eta);
      }
      if (!ok) break;  // aborted: another worker failed or the run halted
      ++self.step;
      self.steps += batch;
      self.position = (s + 1) * batch;
      steps.store(self.steps, std::memory_order_relaxed);  // progress display only
    }
    self.time.clock += ThreadCpuSeconds() - self.time.cpu_mark;
  }

  // Encodes self.z into self.wire, measures the applied operator's error and sends/receives.
  bool EncodeAndExchange(State& self, int w) {
    const std::size_t bytes = self.codec->Encode(self.z, self.wire, self.rng);
    const std::span<const std::byte> message(self.wire.data(), bytes);
    self.codec->Decode(message, self.q);
    double err = 0, norm = 0;
    for (std::size_t u = 0; u < dim_; ++u) {
      const double e = static_cast<double>(scale_) * self.q[u] - self.z[u];
      err += e * e;
      norm += static_cast<double>(self.z[u]) * self.z[u];
    }
    if (norm > 0) {
      self.error_sum += std::sqrt(err / norm);
      ++self.error_count;
    }
    return ExchangeRound(*transport_, topology_, w, self.round, message, *self.link, link_mode_,
                         self.time, self.held, Name());
  }

  std::span<const std::byte> Sent(const State& self) const {
    return {self.wire.data(), wire_bytes_};
  }

  // DCD-PSGD (Tang et al. 2018, Alg. 1): send Q(x_half - x); replicas stay bit-identical to
  // their owners because everyone adds the decode of the same bytes with the same DecodeAdd.
  bool DcdRound(State& self, int w, float eta) {
    MixingRow(topology_, w, self.round, self.x.data(), self.hat_ptrs, self.sources);
    Mix(self.sources, self.mixed);
    ApplyStep(Params(self.mixed), *self.grad, eta);  // x_half
    for (std::size_t u = 0; u < dim_; ++u) self.z[u] = self.mixed[u] - self.x[u];
    if (!EncodeAndExchange(self, w)) return false;
    self.codec->DecodeAdd(Sent(self), 1.0f, self.x);
    for (std::size_t k = 0; k < self.held.size(); ++k) {
      self.codec->DecodeAdd(self.held[k].payload, 1.0f, self.hats[k]);
    }
    ReleaseAll(*transport_, w, self.held);
    ++self.round;
    return true;
  }

  // ECD-PSGD (Tang et al. 2018, Alg. 2): send Q of the extrapolation z; the yh are unbiased
  // estimates of the neighbours' models whose variance decays as 1/t.
  bool EcdRound(State& self, int w, float eta) {
    const double t = static_cast<double>(self.round + 1);
    MixingRow(topology_, w, self.round, self.self_hat.data(), self.hat_ptrs, self.sources);
    Mix(self.sources, self.mixed);
    ApplyStep(Params(self.mixed), *self.grad, eta);  // x_i(t+1)
    const auto half_t = static_cast<float>(t / 2);
    for (std::size_t u = 0; u < dim_; ++u) {
      self.z[u] = self.x[u] + half_t * (self.mixed[u] - self.x[u]);
    }
    if (!EncodeAndExchange(self, w)) return false;
    std::swap(self.x, self.mixed);
    const auto keep = static_cast<float>(1 - 2 / t);
    const auto take = static_cast<float>(2 / t);
    const auto update = [&](std::vector<float>& yh, std::span<const std::byte> message) {
      for (float& v : yh) v *= keep;
      self.codec->DecodeAdd(message, take, yh);
    };
    update(self.self_hat, Sent(self));
    for (std::size_t k = 0; k < self.held.size(); ++k) update(self.hats[k], self.held[k].payload);
    ReleaseAll(*transport_, w, self.held);
    ++self.round;
    return true;
  }

  // CHOCO-SGD's gossip (after the gradient step): q_i = Q(x_i - xh_i), memories, consensus.
  bool ChocoRound(State& self, int w) {
    for (std::size_t u = 0; u < dim_; ++u) self.z[u] = self.x[u] - self.self_hat[u];
    if (!EncodeAndExchange(self, w)) return false;
    self.codec->DecodeAdd(Sent(self), scale_, self.self_hat);
    const std::uint64_t r = self.round;
    self.codec->DecodeAdd(Sent(self), static_cast<float>(topology_.SelfWeight(w, r)) * scale_,
                          self.sum_hat);
    const std::span<const Neighbour> in = topology_.Neighbours(w, r);
    for (std::size_t k = 0; k < self.held.size(); ++k) {
      self.codec->DecodeAdd(self.held[k].payload, static_cast<float>(in[k].weight) * scale_,
                            self.sum_hat);
    }
    ReleaseAll(*transport_, w, self.held);
    const auto gamma = static_cast<float>(settled_.gamma);
    for (std::size_t u = 0; u < dim_; ++u) {
      self.x[u] += gamma * (self.sum_hat[u] - self.self_hat[u]);
    }
    ++self.round;
    return true;
  }

  std::vector<std::span<const float>> Replicas() const {
    std::vector<std::span<const float>> replicas;
    for (const State& s : workers_) replicas.emplace_back(s.x);
    return replicas;
  }

  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }
  State& Worker(int w) { return workers_[static_cast<std::size_t>(w)]; }
  const State& Worker(int w) const { return workers_[static_cast<std::size_t>(w)]; }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  const Algorithm algo_;
  const Topology topology_;
  const std::uint64_t gossip_every_;
  const LinkMode link_mode_;
  const std::size_t dim_;
  LinkSpec link_;  // infinitely fast links unless --link
  CompressedGossipPlan settled_;
  float scale_ = 1;  // choco with an unbiased codec: delta, the rescaled operator's factor
  std::size_t wire_bytes_ = 0;
  std::unique_ptr<ShmTransport> transport_;
  std::vector<State> workers_;
  std::size_t steps_per_epoch_ = 0;
  ReplicaTap tap_;  // LiveModel snapshots; inactive (no copies) without one
};

}  // namespace corral::internal
