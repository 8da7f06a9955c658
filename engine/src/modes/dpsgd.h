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
// Memory: the transport keeps 2 message slots of d floats per directed edge, on the receiver:
// 2 * degree * d floats per worker (so `local` needs 2 (n-1) d per worker).
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
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"

namespace corral::internal {

// Thread safety: owner-only during an epoch; the coordinator reads it while parked.
template <typename M>
struct DpsgdWorker : RoundWorker<M> {
  std::vector<float> mixed;             // the next replica while mixing (swapped in)
  std::vector<const float*> received;   // this round's neighbour models, Neighbours() order
};

template <Model M>
class DpsgdMode : public RoundReplicas<M, DpsgdWorker<M>> {
  using State = DpsgdWorker<M>;

 public:
  DpsgdMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : RoundReplicas<M, State>(model, plan, halt, model.NumParams() * sizeof(float)),
        order_(plan.config.algorithm == Algorithm::kLocal ? MixOrder::kStepThenMix
                                                          : plan.config.mix_order) {}

  void Setup(int w) {
    State& self = this->SetupWorker(w);
    self.mixed.assign(self.x.size(), 0.0f);
    self.received.reserve(self.held.capacity());
  }

  void Epoch(int w, int epoch, std::uint64_t /*start: see round_replicas.h*/,
             std::atomic<std::uint64_t>& steps) {
    this->RunEpoch(w, epoch, steps, [&](State& self, float eta) {
      const bool round = this->RoundDue(self);
      if (!round || order_ == MixOrder::kStepThenMix) this->Descend(self, self.x, eta);
      if (round) {
        if (!this->TimedRound(self, [&] { return Gossip(self, w); })) return false;
        if (order_ == MixOrder::kMixThenStep) this->Descend(self, self.x, eta);
      }
      return true;
    });
  }

  MixOrder mix_order() const { return order_; }
  // Its training state: the replicas and round counters (`mixed` is scratch).
  void VisitState(StateVisitor& v) { this->VisitRounds(v); }

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

  const MixOrder order_;
};

}  // namespace corral::internal
