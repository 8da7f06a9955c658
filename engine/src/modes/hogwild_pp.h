// Over 300 lines: one mode whose ring runs in one process and across ranks (the hop's messages,
// their rest at epoch ends, the ring's checkpoint) over the same groups and token; most of it is
// the comments the concurrency argument needs.
// HOGWILD++ (Zhang, Hsieh, Akella 2016, "HogWild++: A New Mechanism for Decentralized
// Asynchronous Stochastic Gradient Descent", ICDM) under Coordinate (DESIGN.md §2).
//
// The threads form N groups (clusters); group g shares one replica x_g, first-touched by its
// first worker, and its threads run HOGWILD! on it (hogwild_steps.h's HogwildSteps: the fused linear
// loop, with the hot head of hot_head.h unless --hot-coords off, or Gradient() + ApplyStep(),
// relaxed loads and stores). A worker's hot copy reaches x_g at its next sync: the ring mixes
// x_g without it, and the next ring sync's delta = x_g - o_g carries it on. Groups:
//   --group-size c > 0: workers [g c, (g+1) c) form group g (compact pinning fills a core's
//     neighbours first, so a group is local);
//   --group-size 0 (auto): one group per cache domain the workers run on (an L3 cache within
//     a NUMA node, else the node, else the package: corral/placement.h, docs/algorithms.md
//     "Groups"; DimmWitted's per-node replication, moved down to where cache lines start to
//     cross; one domain: plain hogwild); when any worker's domain is unknown (--pin none)
//     c = 1: without placement a shared replica could span sockets, and a replica per thread
//     never makes remote threads write the same cache lines.
//
// Synchronisation: the paper's token ring over the groups 0 -> 1 -> ... -> N-1 -> 0. Each group
// keeps o_g, its replica as of its last synchronisation (initially the starting model). The
// worker of group g that takes the token (the first to see it at a chunk boundary) mixes with
// the next group n = g+1 mod N, coordinate by coordinate:
//   delta = x_g - o_g                                  (g's progress since its last sync)
//   x_g  <- lambda x_n + (1 - lambda) x_g + (beta + lambda - 1) delta
//        =  (1 - lambda) o_g + lambda x_n + beta delta
//   x_n  <- x_n + beta delta                           (the update travels on, decayed by beta)
//   o_g  <- x_g
// with beta the root in (0, 1) of beta^N + beta - 1 = 0 and lambda = 1 - beta^(N-1) (the
// paper's choice: an update reaching the end of the ring has decayed to beta^N = 1 - beta).
// The holder then keeps the token for K more of its own samples and passes it to group n.
// K = --gossip-every (in steps of --batch samples); the default 1 means "auto" for hogwild++:
// K samples with K = max(64, 8 d / nnz per row), so that a sync (3 passes over d floats) costs
// a few percent of the compute between syncs (K samples of nnz coordinates each); one sync per
// step would cost more than the steps whenever d >> nnz. A worker that ends its epoch while
// holding the token passes it at once. One group (N = 1) never synchronises: hogwild.
//
// Memory orders. Replicas: std::atomic_ref<float> relaxed (Params). W: the group's threads
// (steps) and the syncing holders of g and of g-1 (x_g += beta delta); R: the same. The
// cross-group writes race with the steps of the group written to, as HOGWILD!'s races do: a
// coordinate's step or sync may be lost, nothing tears. Token (one std::atomic<uint32_t>):
// 2g means group g may take it, 2g+1 that a worker of g holds it. Taken with
// compare_exchange (acquire) after a relaxed load saw 2g (only then), passed with a release
// store of 2n: o_g (plain floats, touched only by a holder of g's token) is handed from holder
// to holder of g with happens-before through the chain of release/acquire pairs around the
// ring, so o_g needs no atomics. No thread ever waits for the token; a failing worker that
// holds it just stops the ring until the run ends (Coordinate's halt stops everyone anyway).
// Bytes: each sync counts 2 d * 4 bytes to the syncing worker (it writes beta delta into x_n
// and reads x_n, both across groups).
//
// Across ranks (mpirun -np R; docs/algorithms.md "hogwild++ across ranks"): each rank's threads
// form its groups as above (groups never span ranks; every rank has the same number G), the ring
// runs over all R G groups in rank order (beta and lambda from N = R G), and the hop from a
// rank's last group g to the next rank's first group n travels as messages (ring_port.h):
//   g's holder, when it passes (after its K samples): sends delta = x_g - o_g (kDelta), keeps
//     x_s = x_g as sent, and waits for nothing;
//   n's rank, at a worker's chunk boundary: replies with x_n (kReply), then x_n += beta delta,
//     and gives n its turn;
//   g's rank, at a worker's chunk boundary, on the reply: m = lambda x_n + (1 - lambda) x_s +
//     (beta + lambda - 1) delta, x_g += m - x_s (what g learnt since x_s stays), o_g <- m.
// So g's sync is done at its pass instead of its take, and against x_n as it stood when the
// delta arrived; g takes no turn while its reply is outstanding (awaiting_reply_). Each of the
// two messages counts d * 4 bytes to the worker that sends it (2 d * 4 a sync, as above).
// At an epoch's end (EndEpoch) a delta or its reply may still be on its way, and the token is
// Away on every rank but the one it is on, if any: the coordinators, the workers parked, learn
// every rank's count of deltas sent (one gather) and serve their ports until they have applied
// the previous rank's and had each of their own answered (sleeping between looks; an aborted
// transport ends the wait, and the run, on every rank). The ring is then at rest
// (each group's x_g and o_g whole, one free turn on the whole ring), and the evaluation, the
// consensus and a checkpoint see that state. A checkpoint names every group of the ring by its
// number on it (rank r's group g is r G + g) and the token by the group whose turn it is: one
// file, rank 0's, that a run of the same ranks and groups resumes, each rank taking its groups
// back and the token going to the rank of the group whose turn it is (VisitState).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/params.h>
#include <corral/placement.h>

#include "engine/src/gossip/mixing.h"
#include "engine/src/cluster/collectives.h"
#include "engine/src/modes/hogwild_steps.h"
#include "engine/src/modes/ring_port.h"
#include "engine/src/runtime/coordinator.h"
#include "engine/src/runtime/describe.h"

namespace corral::internal {

// The root in (0, 1) of beta^N + beta - 1 = 0 (N >= 1), by bisection: the left side rises
// from -1 at 0 to 1 at 1.
inline double HogwildPPBeta(int groups) {
  double lo = 0, hi = 1;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (std::pow(mid, groups) + mid - 1 < 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

template <Model M>
class HogwildPPMode {
 public:
  HogwildPPMode(const M& model, const RunPlan& plan, std::atomic<bool>& halt)
      : model_(model), plan_(plan), halt_(halt),
        group_of_(ReplicaGroups(plan.threads, GroupSize(plan), plan.worker_domain)),
        groups_(static_cast<std::size_t>(*std::max_element(group_of_.begin(), group_of_.end()) + 1)),
        workers_(plan.threads), first_(plan.first_worker) {
    const int n = RingSize();
    beta_ = static_cast<float>(HogwildPPBeta(n));
    lambda_ = static_cast<float>(1 - std::pow(static_cast<double>(beta_), n - 1));
    const std::size_t batch = static_cast<std::size_t>(plan.config.batch);
    hold_ = static_cast<std::uint64_t>(plan.config.gossip_every) * batch;
    if (plan.config.gossip_every == kGossipEveryAuto) {
      const double rows = static_cast<double>(std::max<std::size_t>(1, plan.train.rows()));
      const double nnz = std::max(1.0, static_cast<double>(plan.train.nnz()) / rows);
      const double d = static_cast<double>(model.NumParams());
      hold_ = std::max<std::uint64_t>(64, static_cast<std::uint64_t>(std::ceil(8 * d / nnz)));
    }
    // Workers look at the token every `chunk_` samples: often enough to hold it about K.
    chunk_ = static_cast<std::size_t>(std::clamp<std::uint64_t>(hold_ / 4, 1, 256));
    head_ = PlanHotHead(model, plan);
    if (plan.cluster->ranks() > 1) {
      port_.emplace(*plan.cluster, model.NumParams());
      // The token starts with rank 0's first group; the other ranks wait for it.
      if (plan.cluster->rank() > 0) token_.store(Away(), std::memory_order_relaxed);
    }
  }

  // Whether an epoch can be read through a window (RunPlan::window_bytes): as hogwild's, the
  // groups' steps being HogwildSteps.
  static bool EpochInWindows(const TrainConfig& config) { return HogwildStepsWindow<M>(config); }

  void Setup(int w) {
    State& self = workers_[w - first_];
    BuildHotWorker(self, model_, plan_, w, head_, false);  // never exclusive: the ring writes too
    const int g = GroupOf(w);
    if (port_ && w == first_) {  // the rank's end of the ring, first-touched by its first worker
      port_->Bind();
      sent_.assign(plan_.initial.size(), 0.0f);
      scratch_.assign(plan_.initial.size(), 0.0f);
    }
    if (FirstOf(g) == w) {  // first touch of the group's replica and snapshot by its first worker
      groups_[static_cast<std::size_t>(g)].x.assign(plan_.initial.begin(), plan_.initial.end());
      groups_[static_cast<std::size_t>(g)].old.assign(plan_.initial.begin(), plan_.initial.end());
    }
  }

  void Epoch(int w, int epoch, std::uint64_t start, std::atomic<std::uint64_t>& steps) {
    State& self = workers_[w - first_];
    self.BeginEpoch(plan_.config.seed, epoch, w, start, &halt_);  // HogwildSteps checks halt_ first
    const int g = GroupOf(w);
    const Params x(groups_[static_cast<std::size_t>(g)].x);
    try {
      HogwildSteps(model_, x, self, plan_.EpochLr(epoch), Batch(), start, chunk_, halt_, steps,
                   [&] {
                     Ring(self, g);
                     return true;
                   });
    } catch (...) {
      if (self.holding) Pass(self, g);
      throw;
    }
    if (self.holding) Pass(self, g);  // the others may go on while this worker is parked
  }

  std::uint64_t Position(int w) const { return workers_.Position(w - first_); }
  // A worker's rows, and its group's replica and snapshot for the group's first worker.
  std::vector<std::span<const std::byte>> OwnedMemory(int w) const {
    std::vector<std::span<const std::byte>> areas = workers_.OwnedMemory(w - first_);
    const int g = GroupOf(w);
    if (FirstOf(g) == w) {
      areas.push_back(std::as_bytes(std::span(groups_[static_cast<std::size_t>(g)].x)));
      areas.push_back(std::as_bytes(std::span(groups_[static_cast<std::size_t>(g)].old)));
    }
    return areas;
  }
  std::uint64_t EpochLength(int w) const { return ShardLength(plan_.held.total, w, plan_.workers); }
  std::uint64_t Samples() const { return workers_.Samples(); }
  std::pair<Shuffle, std::uint64_t> Shuffling() const { return workers_.Shuffling(); }
  // Its training state at an epoch boundary (mode_state.h): each group's replica and its
  // snapshot o_g, whose turn the token gives (nobody holds it between epochs), and each
  // worker's count of hot-head syncs. Across ranks, the ring's (VisitRing).
  void VisitState(StateVisitor& v) {
    if (port_) {
      VisitRing(v);
    } else {
      v.RequireLayout(!v.HasCounter("ring/ranks"),
                      "hogwild++ across ranks (this run: one process; resume it under mpirun "
                      "with the ranks and --threads that wrote it)");
      for (std::size_t g = 0; g < groups_.size(); ++g) {
        v.Floats(Key("x", g), groups_[g].x);
        v.Floats(Key("old", g), groups_[g].old);
      }
      // relaxed: the workers are parked (Crew's epoch end orders their writes before this).
      std::uint32_t token = token_.load(std::memory_order_relaxed);
      v.Count("token", token);
      v.Require(token % 2 == 0 && token / 2 < static_cast<std::uint32_t>(Groups()),
                "its token " + std::to_string(token) + " is not a free turn of one of the " +
                    std::to_string(Groups()) + " groups");
      if (v.loading()) token_.store(token, std::memory_order_relaxed);
    }
    for (int w = 0; w < plan_.threads; ++w) v.Count(Key("hot_syncs", w), workers_[w].hot.syncs);
  }

  // Across ranks, after every epoch (the coordinators, the workers parked; collective): the
  // ring brought to rest (see the header). Throws kWorkerFailed when the transport was aborted
  // (a rank failed) before it came to rest, on every rank alike.
  void EndEpoch() {
    if (!port_) return;
    Cluster& cluster = *plan_.cluster;
    // The counters are the port holder's: this thread's, the workers parked (and after Serve).
    // Every rank's deltas sent: this rank owes the previous rank's a reply each, and awaits one
    // for each of its own. No delta is sent meanwhile (only a worker passes the token).
    const std::vector<std::uint64_t> sent =
        GatherAll(cluster, std::span<const std::uint64_t>(&deltas_sent_, 1));
    const std::uint64_t deltas_due = sent[static_cast<std::size_t>(port_->previous())];
    while ((deltas_applied_ < deltas_due || replies_applied_ < deltas_sent_) && !port_->aborted()) {
      Serve(workers_[0]);  // the port is free; a reply sent here counts to the first worker
      if (deltas_applied_ < deltas_due || replies_applied_ < deltas_sent_) {
        // A message is on its way (the progress threads carry it): look again shortly.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    // The one free turn on the ring: the rank whose token is not Away names its group; and
    // whether a rank stopped waiting on an aborted transport (an abort reaches every rank).
    // relaxed: the workers are parked, and Serve's store was this thread's.
    const std::uint32_t token = token_.load(std::memory_order_relaxed);
    const auto none = static_cast<std::uint64_t>(RingSize());
    const std::uint64_t mine[2] = {
        token == Away() ? none : static_cast<std::uint64_t>(cluster.rank() * Groups()) + token / 2,
        port_->aborted() ? 1u : 0u};
    const std::vector<std::uint64_t> all = GatherAll(cluster, std::span<const std::uint64_t>(mine));
    std::uint64_t held = 0, aborted = 0;
    for (std::size_t r = 0; r < all.size(); r += 2) {
      if (all[r] < none) {
        ++held;
        ring_turn_ = all[r];
      }
      aborted += all[r + 1];
    }
    if (aborted > 0) {
      throw Error(ErrorCode::kWorkerFailed,
                  "hogwild++ across ranks: rank " + std::to_string(cluster.rank()) +
                      " stopped: the ring's transport was aborted (a rank failed) before its "
                      "messages came to rest");
    }
    if (held != 1 || token % 2 != 0) {
      throw Error(ErrorCode::kWorkerFailed,
                  "hogwild++ across ranks: the ring at rest has its token on " +
                      std::to_string(held) + " ranks (expected one free turn; a bug)");
    }
  }

  // The group replicas' mean (across ranks: every rank's groups, in ring order; collective).
  void Snapshot(std::span<float> out) const {
    if (!port_) return MeanInto(Replicas(), out);
    MeanInto(GatherReplicas(*plan_.cluster, Replicas(), out.size()).replicas, out);
  }
  // While the workers run (LiveModel): the same mean, read with relaxed atomic loads.
  void LiveSnapshot(std::span<float> out) const { RelaxedMeanOf(Replicas(), out); }
  double Consensus() const {
    if (!port_) return ConsensusDistance(Replicas());
    const std::size_t d = plan_.initial.size();
    return ConsensusDistance(GatherReplicas(*plan_.cluster, Replicas(), d).replicas);
  }
  std::uint64_t BytesSent() const {
    return workers_.Sum([](const State& s) { return s.sent; });
  }
  std::uint64_t BytesSentMax() const {
    return workers_.Max([](const State& s) { return s.sent; });
  }

  void Report(TrainResult& result) const { ReportHotHead(head_, result); }
  void Describe(TrainResult& r) const {
    DescribeHotHead(r);
    AddSetting(r, "group_size", plan_.config.group_size);
    AddSetting(r, "gossip_every",
               static_cast<std::int64_t>(hold_ / static_cast<std::uint64_t>(plan_.config.batch)));
    const EvalPoint last = LastPoint(r);
    if (last.consensus) {
      const int size = plan_.config.group_size;
      const int ranks = plan_.cluster->ranks();
      const bool by_domain = size == 0 && !HierarchicalGroups(plan_.worker_domain).empty();
      const std::string groups = size > 0    ? Printf("groups of %d thread%s", size, size == 1 ? "" : "s")
                                 : ranks > 1 ? Printf("%d groups, one per rank", ranks)
                                 : by_domain ? Printf("%d groups, one per cache domain", Groups())
                                             : std::string("groups of 1 thread (placement unknown)");
      AddSummaryLine(r, "replicas", Printf("%s on a token ring, consensus %.3g", groups.c_str(),
                                           *last.consensus));
    }
  }

  // For tests and reports, read while the workers are parked. Groups: this rank's.
  int Groups() const { return static_cast<int>(groups_.size()); }
  // The groups on the ring: every rank's.
  int RingSize() const { return Groups() * plan_.cluster->ranks(); }
  int GroupOf(int w) const { return group_of_[static_cast<std::size_t>(w - first_)]; }
  float beta() const { return beta_; }
  float lambda() const { return lambda_; }
  std::uint64_t HoldSamples() const { return hold_; }
  std::uint64_t Syncs() const {
    std::uint64_t total = 0;
    for (const State& s : workers_) total += s.syncs;
    return total;
  }

 private:
  // Thread safety: owner-only; the coordinator reads it while the workers are parked.
  struct State : HogwildWorker<M> {
    bool holding = false;       // this worker holds its group's turn on the ring
    std::uint64_t pass_at = 0;  // ... until its `steps` reach this
    std::uint64_t syncs = 0;
    std::uint64_t sent = 0;     // bytes
  };
  // Thread safety: x by any worker (relaxed, see the header); old by the holder of the
  // group's token only; both first written in Setup by the group's first worker.
  struct Group {
    std::vector<float> x;    // the replica
    std::vector<float> old;  // o_g: the replica after its last sync
  };

  // At a chunk boundary of a worker of group g: pass the token when held long enough, or
  // take it and sync when it is g's turn.
  void Ring(State& self, int g) {
    if (RingSize() == 1) return;
    if (port_) Serve(self);
    if (self.holding) {
      if (self.samples >= self.pass_at) Pass(self, g);
      return;
    }
    // acquire: ApplyReply's o_g and x_g happen before g's next turn.
    if (Crosses(g) && awaiting_reply_.load(std::memory_order_acquire)) return;
    const auto mine = static_cast<std::uint32_t>(2 * g);
    std::uint32_t expected = mine;
    // relaxed look first: most checks find another group's turn and must not write the line.
    if (token_.load(std::memory_order_relaxed) != mine ||
        !token_.compare_exchange_strong(expected, mine + 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      return;
    }
    if (!Crosses(g)) {  // a hop to another rank syncs at the pass (SendDelta)
      Sync(g);
      ++self.syncs;
      self.sent += 2 * groups_[static_cast<std::size_t>(g)].old.size() * sizeof(float);
    }
    self.holding = true;
    self.pass_at = self.samples + hold_;
  }

  void Pass(State& self, int g) {
    self.holding = false;
    if (Crosses(g)) return SendDelta(self, g);
    const int next = (g + 1) % Groups();
    token_.store(static_cast<std::uint32_t>(2 * next), std::memory_order_release);
  }

  // --group-size, where 0 (auto) across ranks is one group per rank: the ranks' workers are not
  // pinned by Corral (their cache domains are unknown) and the launcher binds a rank to a NUMA
  // node in the recommended layout.
  static int GroupSize(const RunPlan& plan) {
    const bool across = plan.workers > plan.threads;
    return plan.config.group_size == 0 && across ? plan.threads : plan.config.group_size;
  }

  // VisitState across ranks: the ring's layout ("ring/ranks", "ring/groups": each rank's), every
  // group's replica and snapshot by its number on the ring ("ring/x/q", "ring/old/q"), and the
  // group whose turn the token gives ("ring/token"), the ring at rest (EndEpoch). Not worker
  // entries (mode_state.h): saving, a rank visits its own groups and GatherModeState merges
  // every rank's into the file; loading, every rank reads them all and keeps its own.
  void VisitRing(StateVisitor& v) {
    const int rank = plan_.cluster->rank();
    const auto ranks = static_cast<std::uint64_t>(plan_.cluster->ranks());
    const auto groups = static_cast<std::uint64_t>(Groups());
    const std::string layout = std::to_string(ranks) + " ranks of " + std::to_string(groups) +
                               " hogwild++ group" + (groups == 1 ? "" : "s") + " each";
    v.RequireLayout(v.HasCounter("ring/ranks"),
                    "hogwild++ in one process (this run: " + layout +
                        "; resume it in one process with the --threads that wrote it)");
    std::uint64_t saved_ranks = ranks, saved_groups = groups;
    v.Count("ring/ranks", saved_ranks);
    v.Count("ring/groups", saved_groups);
    v.RequireLayout(saved_ranks == ranks && saved_groups == groups,
                    std::to_string(saved_ranks) + " ranks of " + std::to_string(saved_groups) +
                        " hogwild++ group" + (saved_groups == 1 ? "" : "s") + " each (this run: " +
                        layout + "; a resumed run needs the same mpirun -np, --threads and " +
                        "--group-size)");
    const std::size_t first = static_cast<std::size_t>(rank) * groups_.size();
    std::vector<float> other;  // loading: another rank's group, read and dropped
    for (std::size_t q = 0; q < static_cast<std::size_t>(RingSize()); ++q) {
      const bool mine = q >= first && q - first < groups_.size();
      if (!mine && !v.loading()) continue;  // its own rank saves it
      if (!mine) other.resize(plan_.initial.size());
      v.Floats(Key("ring/x", q), mine ? groups_[q - first].x : other);
      v.Floats(Key("ring/old", q), mine ? groups_[q - first].old : other);
    }
    v.Count("ring/token", ring_turn_);
    v.Require(ring_turn_ < static_cast<std::uint64_t>(RingSize()),
              "its ring token " + std::to_string(ring_turn_) + " is not the turn of one of the " +
                  std::to_string(RingSize()) + " groups on the ring");
    if (!v.loading()) return;
    const bool here = ring_turn_ / groups == static_cast<std::uint64_t>(rank);
    // relaxed: before the first epoch, which the Crew's start orders after this.
    token_.store(here ? static_cast<std::uint32_t>(2 * (ring_turn_ % groups)) : Away(),
                 std::memory_order_relaxed);
  }

  // Whether group g's next group on the ring lives on another rank.
  bool Crosses(int g) const { return port_ && g == Groups() - 1; }
  // The token's value while it is on another rank (or travelling): no group's turn here.
  std::uint32_t Away() const { return static_cast<std::uint32_t>(2 * Groups()); }

  // The last group g passes the token to the next rank (see the header), holding the port.
  void SendDelta(State& self, int g) {
    port_->Hold();
    Group& group = groups_[static_cast<std::size_t>(g)];
    const Params x(group.x);
    for (std::size_t u = 0; u < x.size(); ++u) {
      sent_[u] = x.Load(u);
      scratch_[u] = sent_[u] - group.old[u];
    }
    // relaxed, both: the port's hand-off orders them before ApplyReply (which clears the flag)
    // and before Serve gives a returning token back (its release store).
    awaiting_reply_.store(true, std::memory_order_relaxed);
    token_.store(Away(), std::memory_order_relaxed);
    const bool sent = port_->Send(port_->next(), RingPort::kDelta, scratch_);
    if (sent) ++deltas_sent_;
    port_->Drop();
    if (!sent) return;  // aborted: the run is ending
    ++self.syncs;
    self.sent += scratch_.size() * sizeof(float);
  }

  // At a chunk boundary, if no other worker of the rank is at it: the ring's messages that
  // arrived (a delta from the previous rank, a reply from the next).
  void Serve(State& self) {
    if (!port_->TryHold()) return;
    try {
      for (const int from : {port_->previous(), port_->next()}) {
        while (std::optional<Message> m = port_->Receive(from)) {
          if (m->header.round == RingPort::kDelta) {
            ApplyDelta(self, *m);
          } else {
            ApplyReply(*m);
          }
          port_->Release(*m);
        }
        if (port_->previous() == port_->next()) break;  // 2 ranks: one channel
      }
    } catch (...) {
      port_->Drop();
      throw;
    }
    port_->Drop();
  }

  // The previous rank's last group synced with group 0 (its `Sync` with x_n = x_0, here).
  void ApplyDelta(State& self, const Message& m) {
    const Params x(groups_[0].x);
    const std::span<const float> delta = RingPort::Floats(m);
    for (std::size_t u = 0; u < x.size(); ++u) {
      const float next = x.Load(u);
      scratch_[u] = next;
      x.Store(u, next + beta_ * delta[u]);
    }
    ++deltas_applied_;
    if (port_->Send(port_->previous(), RingPort::kReply, scratch_)) {
      self.sent += scratch_.size() * sizeof(float);
    }
    token_.store(0, std::memory_order_release);  // group 0's turn (it was Away)
  }

  // The next rank's x_n for the last group's outstanding sync (see the header).
  void ApplyReply(const Message& m) {
    Group& group = groups_[static_cast<std::size_t>(Groups() - 1)];
    const Params x(group.x);
    const std::span<const float> next = RingPort::Floats(m);
    const float keep = beta_ + lambda_ - 1;
    for (std::size_t u = 0; u < x.size(); ++u) {
      const float sent = sent_[u];
      const float mixed = lambda_ * next[u] + (1 - lambda_) * sent + keep * (sent - group.old[u]);
      x.Store(u, x.Load(u) + (mixed - sent));
      group.old[u] = mixed;
    }
    ++replies_applied_;
    awaiting_reply_.store(false, std::memory_order_release);
  }

  // The HOGWILD++ update of group g with the next group (see the header).
  void Sync(int g) {
    Group& self = groups_[static_cast<std::size_t>(g)];
    const Params x(self.x), xn(groups_[static_cast<std::size_t>((g + 1) % Groups())].x);
    float* const old = self.old.data();
    const float keep = beta_ + lambda_ - 1;
    for (std::size_t u = 0; u < x.size(); ++u) {
      const float xu = x.Load(u);
      const float delta = xu - old[u];
      const float next = xn.Load(u);
      const float mixed = lambda_ * next + (1 - lambda_) * xu + keep * delta;
      xn.Store(u, next + beta_ * delta);
      x.Store(u, mixed);
      old[u] = mixed;
    }
  }

  // Group g's first worker (a global id).
  int FirstOf(int g) const {
    const auto at = std::find(group_of_.begin(), group_of_.end(), g) - group_of_.begin();
    return first_ + static_cast<int>(at);
  }
  std::vector<std::span<const float>> Replicas() const {
    std::vector<std::span<const float>> replicas;
    for (const Group& group : groups_) replicas.emplace_back(group.x);
    return replicas;
  }
  std::size_t Batch() const { return static_cast<std::size_t>(plan_.config.batch); }

  const M& model_;
  const RunPlan& plan_;
  std::atomic<bool>& halt_;
  const std::vector<int> group_of_;
  HotHead head_;  // fused linear loop: coordinates each worker keeps a private copy of
  std::vector<Group> groups_;
  WorkerSet<State> workers_;
  const int first_;  // this rank's first worker (RunPlan::first_worker)
  float beta_ = 1;
  float lambda_ = 0;
  std::uint64_t hold_ = 1;   // samples a holder keeps the token after its sync (K)
  std::size_t chunk_ = 256;  // samples between looks at the token
  // The ring's token: W/R any worker (see the header); between epochs nobody holds it.
  alignas(kCacheLine) std::atomic<std::uint32_t> token_{0};

  // Across ranks only (see the header).
  std::optional<RingPort> port_;
  // Thread safety: the port's holder only (ring_port.h). sent_: x_s of the last group's delta
  // in flight; scratch_: the payload being sent; the rank's deltas sent, deltas applied and
  // replies applied (EndEpoch waits until every delta is applied and answered).
  std::vector<float> sent_;
  std::vector<float> scratch_;
  std::uint64_t deltas_sent_ = 0;
  std::uint64_t deltas_applied_ = 0;
  std::uint64_t replies_applied_ = 0;
  // The ring's free turn at rest (a group's number on the ring): set by EndEpoch and by a
  // resume, read by VisitState; coordinator-only. It starts with rank 0's first group.
  std::uint64_t ring_turn_ = 0;
  // W: SendDelta (set, relaxed), ApplyReply (clear, release); R: takers of the last group's
  // turn (acquire): o_g and x_g as the reply left them happen before that group's next turn.
  alignas(kCacheLine) std::atomic<bool> awaiting_reply_{false};
};

}  // namespace corral::internal
