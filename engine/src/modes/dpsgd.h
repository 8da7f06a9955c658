// Replica modes under the coordinator (DESIGN.md §2): D-PSGD (Lian et al. 2017) and local SGD.
// Rounds, virtual time, failures and resume are RoundReplicas' (gossip/round_replicas.h),
// whose header explains them.
//
// Every `--gossip-every` K-th step is also a gossip round r: the worker sends x_i (fp32) to the
// recipients of its topology row, receives its neighbours' models of the same round r and mixes
//   mix-then-step (as written):  x_i <- sum_j W_ij x_j - eta g_i(x_i)
//   step-then-mix:               x_i <- sum_j W_ij (x_j - eta g_j(x_j))
// The step is the engine's proximal step (corral/step.h ApplyStep) on a Params view of the
// replica, so sparse models keep their per-coordinate L2. Steps that are not rounds are plain
// local SGD steps.
// `local` is the same machinery on the complete graph (Metropolis weights there are 1/n: the
// exact average), step-then-mix, with K = H local steps between averages. Each worker sums the
// n models in worker order, self included, so every replica is bitwise the same average.
// Because of that, `local` sends only what changed (gossip/sparse_changes.h): each step marks
// the coordinates it wrote, and a round's message is the (index, value) pairs of the
// coordinates whose bits differ from the last average (`base`) while they are at most d / 64,
// else the dense x_i (and in the run's first round, before `base` exists); the average is taken over
// the union of the changes only, O(changed) per round. With 2 or 4 workers the result is the
// dense round's bit for bit (so `--gossip-every 1` and the golden digests do not move); with
// other n, coordinates nobody changed keep the exact common value where the dense formula
// could move them by an ulp. dpsgd on a general topology sends the dense x_i: after a mix
// every coordinate differs between neighbours (docs/algorithms.md, "What a round sends").
// Memory: the transport keeps 2 message slots of d floats per directed edge, on the receiver:
// 2 * degree * d floats per worker (so `local` needs 2 (n-1) d per worker, plus `base`).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <corral/params.h>
#include <corral/step.h>

#include "engine/src/gossip/gossip_round.h"
#include "engine/src/gossip/mixing.h"
#include "engine/src/gossip/round_replicas.h"
#include "engine/src/gossip/sparse_changes.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"

namespace corral::internal {

// Thread safety: owner-only during an epoch; the coordinator reads it while parked.
template <typename M>
struct DpsgdWorker : RoundWorker<M> {
  std::vector<float> mixed;             // the next replica while mixing (swapped in)
  std::vector<const float*> received;   // this round's neighbour models, Neighbours() order
  // local only (sparse rounds, gossip/sparse_changes.h):
  std::vector<float> base;              // the last round's common average (the run's first
                                        // round: not yet one)
  ChangedCoords changed;                // coordinates the steps wrote since the last round
  ChangeMessage outbox;                 // this round's message
  std::vector<ChangeTerm> terms;        // this round's row, worker order
};

template <Model M>
class DpsgdMode : public RoundReplicas<M, DpsgdWorker<M>> {
  using State = DpsgdWorker<M>;

 public:
  DpsgdMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : RoundReplicas<M, State>(model, plan, halt, model.NumParams() * sizeof(float)),
        order_(plan.config.algorithm == Algorithm::kLocal ? MixOrder::kStepThenMix
                                                          : plan.config.mix_order),
        sparse_(plan.config.algorithm == Algorithm::kLocal) {
    // local's round costs grow with its changes until the message turns dense.
    if (sparse_) this->PriceRoundsByChanges(MaxSparseChanges(model.NumParams()));
  }

  void Setup(int w) {
    State& self = this->SetupWorker(w);
    self.mixed.assign(self.x.size(), 0.0f);
    self.received.reserve(self.held.capacity());
    if (sparse_) {
      self.base.assign(self.x.size(), 0.0f);
      self.changed.Init(self.x.size());
      self.outbox.Init(self.x.size());
      self.terms.reserve(self.held.capacity() + 1);
    }
  }

  void Epoch(int w, int epoch, std::uint64_t /*start: see round_replicas.h*/,
             std::atomic<std::uint64_t>& steps) {
    this->RunEpoch(w, epoch, steps, [&](State& self, float eta) {
      const bool round = this->RoundDue(self);
      if (!round || order_ == MixOrder::kStepThenMix) {
        this->StepInPlace(self, eta);
        if (sparse_) {
          this->ForEachDescended(self, self.x.size(), [&](std::uint32_t u) { self.changed.Mark(u); },
                                 [&] { self.changed.Saturate(); });
        }
      }
      if (round) {
        if (order_ == MixOrder::kMixThenStep) this->Gradient(self);  // g_i at x_i, before the mix
        if (!this->TimedRound(self, [&] { return sparse_ ? SparseGossip(self, w) : Gossip(self, w); })) {
          return false;
        }
        if (order_ == MixOrder::kMixThenStep) this->Descend(self, self.x, eta);
      }
      return true;
    });
  }

  MixOrder mix_order() const { return order_; }
  // Its training state: the replicas and round counters (`mixed` is scratch), and for local
  // each worker's `base`; a resumed worker scans all coordinates for its first message (the
  // message is a function of x and base, so the run continues bit for bit).
  void VisitState(StateVisitor& v) {
    this->VisitRounds(v);
    if (!sparse_) return;
    for (int w = this->first_; w < this->first_ + this->plan_.threads; ++w) {
      State& s = this->Worker(w);
      v.Floats(Key("base", w - this->first_), s.base);
      if (v.loading()) s.changed.Saturate();
    }
  }

  void Describe(TrainResult& r) const {
    this->DescribeRounds(r);
    AddSetting(r, "mix_order", std::string(ToString(order_)));
    const EvalPoint last = LastPoint(r);
    if (last.consensus) {
      AddSummaryLine(r, "replicas", Printf("%s, %s, consensus %.3g, virtual time %.2fs",
                                           GossipTopologySpec(this->plan_.config).c_str(),
                                           std::string(ToString(order_)).c_str(), *last.consensus,
                                           last.virtual_s));
      this->DescribeGossip(r, last);
    }
  }

 private:
  // One round: send x_i, receive the neighbours' round, mix in worker order. False: the
  // transport was aborted (x_i is then unchanged).
  bool Gossip(State& self, int w) {
    if (!this->Exchange(self, w, std::as_bytes(std::span<const float>(self.x)))) return false;
    this->Lap(self, &RoundTimes::wait_s);
    self.received.clear();  // capacity reserved in Setup: no allocation
    for (const Message& m : self.held) {
      self.received.push_back(reinterpret_cast<const float*>(m.payload.data()));
    }
    MixingRow(this->topology_, w, self.round, self.x.data(), self.received, self.sources);
    Mix(self.sources, self.mixed);
    std::swap(self.x, self.mixed);
    this->ReleaseHeld(self, w);
    ++self.round;
    return true;
  }

  // local's round (sparse_changes.h): send the changes since the last round (or x_i), receive
  // the others', and average over their union. False: aborted (x_i, base and the marks are
  // then unchanged).
  bool SparseGossip(State& self, int w) {
    const std::size_t d = self.x.size();
    // The run's first round has no common average yet: everyone sends x_i.
    const std::span<const std::byte> payload =
        self.round == 0 ? std::as_bytes(std::span<const float>(self.x))
                        : self.outbox.Encode(self.x, self.base, self.changed);
    this->Lap(self, &RoundTimes::encode_s);
    // What the automatic period prices (PriceRoundsByChanges): k, or the most a sparse
    // message carries when this one is dense.
    self.times.changed += payload.size() == d * sizeof(float) ? MaxSparseChanges(d) : SparseCount(payload);
    if (!this->Exchange(self, w, payload, MessageSizes::kBounded)) return false;
    this->Lap(self, &RoundTimes::wait_s);
    self.terms.clear();  // capacity reserved in Setup: no allocation
    bool all_dense = true;
    this->ForEachInRow(self, w, [&](float weight, int k) {
      ChangeTerm t{.weight = weight, .self = k < 0};
      if (k >= 0) {
        ParseChanges(self.held[static_cast<std::size_t>(k)], d, w, this->name(), t);
      } else if (payload.size() == d * sizeof(float)) {
        t.dense = self.x.data();
      } else {
        SparseTerm(reinterpret_cast<const std::uint32_t*>(payload.data()), t);
      }
      all_dense = all_dense && t.dense != nullptr;
      self.terms.push_back(t);
    });
    this->Lap(self, &RoundTimes::decode_s);
    if (all_dense) {
      // Every message dense: dpsgd's vectorised mix, today's bits for any n.
      self.sources.clear();
      for (const ChangeTerm& t : self.terms) self.sources.push_back({t.weight, t.dense});
      Mix(self.sources, self.mixed);
      std::swap(self.x, self.mixed);
      std::copy(self.x.begin(), self.x.end(), self.base.begin());
    } else {
      MixChanges(self.terms, self.x, self.base);
    }
    self.changed.Clear();
    this->ReleaseHeld(self, w);
    ++self.round;
    return true;
  }

  const MixOrder order_;
  const bool sparse_;  // local: sparse rounds (sparse_changes.h)
};

}  // namespace corral::internal
