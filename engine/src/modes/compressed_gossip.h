// Over 300 lines: three algorithms (DCD, ECD, CHOCO) sharing one worker state, one setup and one round.
// The compressed synchronous replica modes under the coordinator (DESIGN.md §2): DCD-PSGD, ECD-PSGD
// (Tang et al. 2018, Alg. 1 and 2) and CHOCO-SGD (Koloskova et al. 2019). Rounds, halting,
// failures, virtual time and resume at epoch boundaries are RoundReplicas'
// (gossip/round_replicas.h), whose header explains them; only what a worker keeps and sends
// differs. A worker encodes
// one message per round and sends the same bytes to all its recipients; every decode of those
// bytes (the sender's own included) gives bit-identical values.
//
// Per worker i, with d parameters (memories first-touched by the owner in Setup):
//   dcd   x_i (== xh_i: the owner's copy of its own replica), xh_j per neighbour.
//           x_half = sum_j W_ij xh_j - eta g_i(x_i); z = x_half - x_i; send Q(z);
//           x_i += Q(z); on receipt xh_j += Q(z_j).
//         With local steps (--gossip-every auto, the default, under the drift rule's limit:
//         gossip_period.h DriftRule; or K > 1) x_i
//         is the public replica (every xh of it equals it) and the worker steps a working
//         model y_i between rounds (y_i = x_i after each round); a round's step is then
//           x_half = sum_j W_ij xh_j + (y_i - x_i) - eta g_i(y_i),   z = x_half - x_i,
//         so the compressed quantity is the change over the K steps and the mix. The own
//         change enters unmixed (the neighbours' of these K steps arrive next round), which is
//         why an automatic K watches the replicas' drift (DriftRule). A round at K = 1
//         computes what the paper's form above computes; --gossip-every 1 runs that form.
//   ecd   x_i, yh_i and yh_j per neighbour; round t = 1, 2, ...
//           x_i(t+1) = sum_j W_ij yh_j(t) - eta g_i(x_i(t));
//           z = (1 - t/2) x_i(t) + (t/2) x_i(t+1), computed as x_i(t) + (t/2)(x_i(t+1) - x_i(t))
//           (the written form cancels two terms of size t|x| in float); send Q(z);
//           yh_j(t+1) = (1 - 2/t) yh_j(t) + (2/t) Q(z_j) for self and neighbours.
//         With local steps (K > 1 or auto), as dcd: x_i(t) is the public replica (the model
//         at round t) and a working model y_i takes the steps between rounds (y_i = x_i after
//         each round); the round's step is then
//           x_i(t+1) = sum_j W_ij yh_j(t) + (y_i - x_i(t)) - eta g_i(y_i),
//         and z, the estimates and their weights are the paper's, with t counting rounds (not
//         steps). The estimates track the sequence x_i(1), x_i(2), ... of round models: an
//         exact estimate stays exact, yh(t+1) = (1 - 2/t) x(t) + (2/t)(x(t) + (t/2)(x(t+1) -
//         x(t))) = x(t+1), for any t and whatever happened between rounds, so t decides only
//         how the codec's noise n = Q(z) - z is averaged out: e = yh - x obeys
//         e(t+1) = (1 - 2/t) e(t) + (2/t) n(t), and with |n|^2 ~ omega |z|^2, z holding
//         (t/2) e through the mix, |e|^2 grows by about 1 - 4/t + omega per round: stable for
//         t < ~4/omega (compressed_gossip_test.cc, kEcdBatch). Counting rounds puts that limit
//         at 4/omega rounds, K times as many steps as ECD at K = 1 reaches; counting steps
//         (t += K) would reach it after 4/(omega K) rounds. The change a round carries is K
//         steps' (plus the mix), so each message's noise is larger, over K times fewer rounds.
//         --gossip-every 1 runs the form above unchanged. With local steps ecd's default codec
//         is qsgd:16 (ResolvedCompress, train.cc): qsgd:8's omega puts 4/omega within a run.
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
// of the operator applied (choco: delta Q) is averaged over a sample of an epoch's messages
// (every 16th round, and the epoch's first: see EncodeAndExchange).
#pragma once

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

#include <corral/params.h>
#include <corral/step.h>
#include <corral/topology.h>

#include "engine/src/compress/compressor.h"
#include "engine/src/gossip/gossip_round.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/gossip/round_replicas.h"
#include "engine/src/modes/compressed_gossip_setup.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"

namespace corral::internal {

// Thread safety: owner-only during an epoch; the coordinator reads it while parked.
template <typename M>
struct CompressedGossipWorker : RoundWorker<M> {
  std::vector<float> mixed;              // dcd: x_half; ecd: x_i(t+1)
  std::vector<float> z;                  // the vector compressed this round
  std::vector<float> q;                  // the applied Q(z), for the error measurement
  std::vector<float> self_hat;           // ecd: yh_i; choco: xh_i
  std::vector<float> sum_hat;            // choco: s_i
  std::vector<float> pub;                // dcd, ecd with local steps: the public x_i (x: y_i)
  std::vector<std::vector<float>> hats;  // dcd, ecd: per neighbour, Neighbours(w) order
  std::vector<const float*> hat_ptrs;    // hats' data, for the mixing row
  std::vector<std::byte> wire;           // this round's message
  std::unique_ptr<Compressor> codec;     // own instance: ef: keeps per-sender state
  double error_sum = 0;                  // relative errors since the coordinator last read
  std::uint64_t error_count = 0;
};

template <Model M>
class CompressedGossipMode : public RoundReplicas<M, CompressedGossipWorker<M>> {
  using State = CompressedGossipWorker<M>;

 public:
  CompressedGossipMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : CompressedGossipMode(model, plan, halt, MakeCompressor(plan.specs.compress, model.NumParams())) {}

  void Setup(int w) {
    State& self = this->SetupWorker(w);
    const std::size_t degree = this->topology_.Neighbours(w).size();
    // First touch on the owner's thread: every memory is NUMA-local.
    const auto fresh = [&](std::vector<float>& v) { v.assign(this->plan_.initial.begin(), this->plan_.initial.end()); };
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
    if (local_steps_) fresh(self.pub);
    self.wire.resize(wire_bytes_);
    self.codec = MakeCompressor(this->plan_.specs.compress, dim_);
  }

  void Epoch(int w, int epoch, std::uint64_t /*start: see round_replicas.h*/,
             std::atomic<std::uint64_t>& steps) {
    this->RunEpoch(w, epoch, steps, [&](State& self, float eta) {
      if (local_steps_) {
        if (!this->RoundDue(self)) {
          this->StepInPlace(self, eta);  // a local step of y_i
          return true;
        }
        this->Gradient(self);  // g_i at y_i, applied to the round's x_half (x_i(t+1))
        return this->TimedRound(self, [&] {
          return algo_ == Algorithm::kDcd ? DcdLocalRound(self, w, eta) : EcdRound(self, w, eta);
        });
      }
      if (algo_ != Algorithm::kChoco) {
        this->Gradient(self);
        return this->TimedRound(self, [&] {
          return algo_ == Algorithm::kDcd ? DcdRound(self, w, eta) : EcdRound(self, w, eta);
        });
      }
      this->StepInPlace(self, eta);
      return !this->RoundDue(self) || this->TimedRound(self, [&] { return ChocoRound(self, w); });
    });
  }

  // Its training state: the replicas and round counters, and each worker's memories (dcd's
  // copies of its neighbours and its public replica, ecd's estimates, choco's xh_i and s_i)
  // and its codec's (ef: the residual). mixed, z, q and wire are scratch.
  void VisitState(StateVisitor& v) {
    this->VisitRounds(v);
    for (int w = 0; w < this->plan_.threads; ++w) {  // by index on the rank, as VisitRounds
      State& self = this->Worker(this->first_ + w);
      for (std::size_t k = 0; k < self.hats.size(); ++k) {
        v.Floats(Key("hat", w) + "/" + std::to_string(k), self.hats[k]);
      }
      if (!self.self_hat.empty()) v.Floats(Key("self_hat", w), self.self_hat);
      if (!self.sum_hat.empty()) v.Floats(Key("sum_hat", w), self.sum_hat);
      if (!self.pub.empty()) v.Floats(Key("public", w), self.pub);
      if (!self.codec->State().empty()) v.Floats(Key("codec", w), self.codec->State());
    }
  }

  // The mean of |Q(z) - z| / |z| over the messages since the last call (zero vectors skipped);
  // nullopt when none was sent. Coordinator only, while the workers are parked.
  std::optional<double> CompressRelError() {
    double sum = 0;
    std::uint64_t count = 0;
    for (int w = this->first_; w < this->first_ + this->plan_.threads; ++w) {
      State& s = this->Worker(w);
      sum += s.error_sum;
      count += s.error_count;
      s.error_sum = 0;
      s.error_count = 0;
    }
    sum = SumAcross(*this->plan_.cluster, sum);  // collective across ranks
    count = SumAcross(*this->plan_.cluster, count);
    if (count == 0) return std::nullopt;
    return sum / static_cast<double>(count);
  }
  // The run's warnings and CHOCO's gamma, into the result.
  void Report(TrainResult& result) const {
    result.warnings.insert(result.warnings.end(), settled_.warnings.begin(), settled_.warnings.end());
    result.gamma = settled_.gamma;
  }

  void Describe(TrainResult& r) const {
    this->DescribeRounds(r);
    const RunPlan& plan = this->plan_;
    AddSetting(r, "compress", plan.specs.compress);
    if (algo_ == Algorithm::kChoco) AddSetting(r, "gamma", r.gamma);
    const EvalPoint last = LastPoint(r);
    if (!last.consensus) return;
    AddSummaryLine(r, "replicas", Printf("%s, %s, consensus %.3g, virtual time %.2fs",
                                         plan.config.topology.c_str(), plan.specs.compress.c_str(),
                                         *last.consensus, last.virtual_s));
    this->DescribeGossip(r, last);
    if (last.compress_rel_error) {
      AddSummaryLine(r, "compression",
                     Printf("relative error %.3g", *last.compress_rel_error) +
                         (algo_ == Algorithm::kChoco ? Printf(", gamma %.3g", r.gamma) : ""));
    }
  }

  // White-box views for tests, valid while the workers are parked.
  // dcd: w's copy xh_j of its k-th neighbour's replica (Neighbours(w) order); ecd: yh_j.
  std::span<const float> NeighbourMemory(int w, std::size_t k) const { return this->Worker(w).hats[k]; }
  // dcd: the replica x_i that every neighbour's copy equals; ecd: the x_i(t) of the last round
  // (with local steps the public one, not the working model y_i).
  std::span<const float> PublicReplica(int w) const {
    return local_steps_ ? this->Worker(w).pub : this->Worker(w).x;
  }
  // ecd: yh_i; choco: xh_i.
  std::span<const float> OwnMemory(int w) const { return this->Worker(w).self_hat; }
  // choco: s_i.
  std::span<const float> MixedMemory(int w) const { return this->Worker(w).sum_hat; }
  double gamma() const { return settled_.gamma; }

 private:
  CompressedGossipMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt,
                       const std::unique_ptr<Compressor>& codec)
      : RoundReplicas<M, State>(model, plan, halt, codec->WireBytes(model.NumParams())), algo_(plan.config.algorithm),
        local_steps_(algo_ != Algorithm::kChoco && plan.config.gossip_every != 1),
        dim_(model.NumParams()),
        settled_(PlanCompressedGossip(plan.config, this->topology_, *codec, dim_)),
        scale_(algo_ == Algorithm::kChoco && codec->unbiased() ? static_cast<float>(codec->Delta(dim_)) : 1.0f),
        wire_bytes_(codec->WireBytes(dim_)) {}

  // Encodes self.z into self.wire, measures the applied operator's error and sends/receives.
  // Times the round's phases: what came before is mix, then encode, then wait.
  bool EncodeAndExchange(State& self, int w) {
    this->Lap(self, &RoundTimes::mix_s);
    const std::size_t bytes = self.codec->Encode(self.z, self.wire, self.rng);
    const std::span<const std::byte> message(self.wire.data(), bytes);
    // The error costs a decode and a pass over d, as much as the encode itself: it is measured
    // on every kErrorEvery-th round and on each epoch's first messages until one counts (the
    // coordinator resets error_count), a sample of the epoch's messages.
    if (self.error_count == 0 || self.round % kErrorEvery == 0) {
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
    }
    this->Lap(self, &RoundTimes::encode_s);
    const bool exchanged = this->Exchange(self, w, message);
    this->Lap(self, &RoundTimes::wait_s);
    return exchanged;
  }

  std::span<const std::byte> Sent(const State& self) const {
    return {self.wire.data(), wire_bytes_};
  }

  // DCD-PSGD (Tang et al. 2018, Alg. 1): send Q(x_half - x); replicas stay bit-identical to
  // their owners because everyone adds the decode of the same bytes with the same DecodeAdd.
  bool DcdRound(State& self, int w, float eta) {
    MixingRow(this->topology_, w, self.round, self.x.data(), self.hat_ptrs, self.sources);
    Mix(self.sources, self.mixed);
    this->Descend(self, self.mixed, eta);  // x_half
    for (std::size_t u = 0; u < dim_; ++u) self.z[u] = self.mixed[u] - self.x[u];
    if (!EncodeAndExchange(self, w)) return false;
    self.codec->DecodeAdd(Sent(self), 1.0f, self.x);
    for (std::size_t k = 0; k < self.held.size(); ++k) {
      self.codec->DecodeAdd(self.held[k].payload, 1.0f, self.hats[k]);
    }
    this->Lap(self, &RoundTimes::decode_s);
    this->ReleaseHeld(self, w);
    ++self.round;
    return true;
  }

  // DCD-PSGD with local steps: x_i (self.pub) is what the neighbours hold, y_i (self.x) took
  // the steps since the last round. The round sends Q(z) for the change of the local steps, the
  // mix and this step, and restarts y_i from the new x_i. Exactness as in DcdRound.
  bool DcdLocalRound(State& self, int w, float eta) {
    MixingRow(this->topology_, w, self.round, self.pub.data(), self.hat_ptrs, self.sources);
    Mix(self.sources, self.mixed);
    AddOwnChange(self);
    this->Descend(self, self.mixed, eta);  // x_half, with g_i taken at y_i
    for (std::size_t u = 0; u < dim_; ++u) self.z[u] = self.mixed[u] - self.pub[u];
    if (!EncodeAndExchange(self, w)) return false;
    self.codec->DecodeAdd(Sent(self), 1.0f, self.pub);
    for (std::size_t k = 0; k < self.held.size(); ++k) {
      self.codec->DecodeAdd(self.held[k].payload, 1.0f, self.hats[k]);
    }
    this->Lap(self, &RoundTimes::decode_s);
    this->ReleaseHeld(self, w);
    std::copy(self.pub.begin(), self.pub.end(), self.x.begin());
    ++self.round;
    return true;
  }

  // ECD-PSGD (Tang et al. 2018, Alg. 2): send Q of the extrapolation z; the yh are unbiased
  // estimates of the neighbours' models whose variance decays as 1/t. With local steps
  // (see the header) x_i(t) is self.pub, y_i (self.x) took the steps since the last round, and
  // y_i restarts from the new x_i(t+1); without, x_i(t) is self.x and the arithmetic is the
  // paper's form, untouched (the golden digests of --gossip-every 1).
  bool EcdRound(State& self, int w, float eta) {
    const double t = static_cast<double>(self.round + 1);
    std::vector<float>& x = local_steps_ ? self.pub : self.x;  // x_i(t)
    MixingRow(this->topology_, w, self.round, self.self_hat.data(), self.hat_ptrs, self.sources);
    Mix(self.sources, self.mixed);
    if (local_steps_) AddOwnChange(self);
    this->Descend(self, self.mixed, eta);  // x_i(t+1), with g_i taken at y_i
    const auto half_t = static_cast<float>(t / 2);
    for (std::size_t u = 0; u < dim_; ++u) {
      self.z[u] = x[u] + half_t * (self.mixed[u] - x[u]);
    }
    if (!EncodeAndExchange(self, w)) return false;
    std::swap(x, self.mixed);
    const auto keep = static_cast<float>(1 - 2 / t);
    const auto take = static_cast<float>(2 / t);
    const auto update = [&](std::vector<float>& yh, std::span<const std::byte> message) {
      for (float& v : yh) v *= keep;
      self.codec->DecodeAdd(message, take, yh);
    };
    update(self.self_hat, Sent(self));
    for (std::size_t k = 0; k < self.held.size(); ++k) update(self.hats[k], self.held[k].payload);
    this->Lap(self, &RoundTimes::decode_s);
    this->ReleaseHeld(self, w);
    if (local_steps_) std::copy(self.pub.begin(), self.pub.end(), self.x.begin());
    ++self.round;
    return true;
  }

  // With local steps: adds the working model's change since the last round, own = y_i - x_i, to
  // the mix (self.mixed), and measures in the same pass the drift rule's sums (RoundTimes
  // pull_sq, own_sq; DriftRule): pull = mix - x_i. mixed gets the same bits as without them.
  void AddOwnChange(State& self) {
    double pull_sq = 0, own_sq = 0;
    for (std::size_t u = 0; u < dim_; ++u) {
      const float own = self.x[u] - self.pub[u];
      const double pull = static_cast<double>(self.mixed[u]) - self.pub[u];
      pull_sq += pull * pull;
      own_sq += static_cast<double>(own) * own;
      self.mixed[u] += own;
    }
    self.times.pull_sq += pull_sq;
    self.times.own_sq += own_sq;
  }

  // CHOCO-SGD's gossip (after the gradient step): q_i = Q(x_i - xh_i), memories, consensus.
  bool ChocoRound(State& self, int w) {
    for (std::size_t u = 0; u < dim_; ++u) self.z[u] = self.x[u] - self.self_hat[u];
    if (!EncodeAndExchange(self, w)) return false;
    self.codec->DecodeAdd(Sent(self), scale_, self.self_hat);
    const std::uint64_t r = self.round;
    self.codec->DecodeAdd(Sent(self), static_cast<float>(this->topology_.SelfWeight(w, r)) * scale_,
                          self.sum_hat);
    const std::span<const Neighbour> in = this->topology_.Neighbours(w, r);
    for (std::size_t k = 0; k < self.held.size(); ++k) {
      self.codec->DecodeAdd(self.held[k].payload, static_cast<float>(in[k].weight) * scale_,
                            self.sum_hat);
    }
    this->Lap(self, &RoundTimes::decode_s);
    this->ReleaseHeld(self, w);
    const auto gamma = static_cast<float>(settled_.gamma);
    for (std::size_t u = 0; u < dim_; ++u) {
      self.x[u] += gamma * (self.sum_hat[u] - self.self_hat[u]);
    }
    ++self.round;
    return true;
  }

  static constexpr std::uint64_t kErrorEvery = 16;  // rounds between error measurements
  const Algorithm algo_;
  // dcd and ecd with local steps between rounds (see the header): unless --gossip-every is 1.
  const bool local_steps_;
  const std::size_t dim_;
  const CompressedGossipPlan settled_;
  const float scale_;  // choco with an unbiased codec: delta, the rescaled operator's factor
  const std::size_t wire_bytes_;
};

}  // namespace corral::internal
