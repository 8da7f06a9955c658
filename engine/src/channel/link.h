// Link emulation (DESIGN.md §5): when would a message arrive over a network of a given latency
// and bandwidth? Pure arithmetic on seconds; the transport only carries the answer (the
// header's `due`).
//
//   --link latency=5ms,bandwidth=10Mbit[,nic=1Gbit]     (ParseLinkSpec)
//   --link-mode virtual|realtime                         (ParseLinkMode)
//
// The model. Worker i sends a message of b bytes to j at time t (its own clock). Every worker
// has one NIC that serialises its sends at `nic` bytes/s (default: the link bandwidth), and
// each directed link (i, j) carries b bytes in b/bandwidth after `latency`:
//
//   nic_start = max(t, nic_free_i)              nic_free_i  = nic_start + b / nic
//   wire_start = max(nic_start, link_free_ij)   link_free_ij = wire_start + b / bandwidth
//   delivery  = max(nic_free_i, link_free_ij) + latency
//
// With the default nic == bandwidth this is exactly delivery = max(t, link_free) + b/bandwidth
// + latency with each worker's sends serialised: a star centre sending to 7 leaves delivers
// the k-th copy at k b/bandwidth + latency (the parameter-server bottleneck of Lian et al.
// 2017). A faster NIC (nic > bandwidth) lets a worker feed several links at once (cut-through:
// the k-th copy leaves the NIC at k b/nic and is on its own wire meanwhile); a slower one
// makes the NIC the bottleneck. No bandwidth means infinitely fast links; no nic means
// nic = bandwidth.
//
// Clocks. In virtual mode (the default) t is the worker's virtual clock: it advances by the
// measured compute time and, on receipt, becomes max(own clock, delivery) (LinkModel::Arrive).
// In realtime mode t is Transport::WallSeconds() and the transport holds each message until
// its due time, to check the model against real waiting.
//
// Thread safety: LinkSpec is a value. LinkModel is owner-only: one per sending worker.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace corral::internal {

enum class LinkMode {
  kVirtual,   // only the virtual clocks move (experiments with slow links finish quickly)
  kRealtime,  // Receive also holds each message until its due wall time
};

struct LinkSpec {
  static constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  double latency_s = 0;                       // one-way latency of every link, seconds
  double bandwidth_bytes_per_s = kUnlimited;  // of each directed link
  double nic_bytes_per_s = 0;                 // of each worker's NIC; 0: same as bandwidth

  // The spec again, e.g. "latency=5ms,bandwidth=10Mbit" (parses back to this; for reports).
  std::string ToString() const;
};

// Parses `latency=<n>(us|ms|s),bandwidth=<n>(bit|Kbit|Mbit|Gbit)[,nic=<n>(bit|...|Gbit)]`, in
// any order, each key at most once, at least one key. Rates are per second, decimal prefixes
// (10Mbit = 10^7 bit/s), an optional "/s" is accepted. Throws corral::Error (kBadConfig)
// naming the bad part and what was expected.
LinkSpec ParseLinkSpec(std::string_view spec);

// "virtual" or "realtime"; anything else is kBadConfig.
LinkMode ParseLinkMode(std::string_view mode);

class LinkModel {
 public:
  // The model of sender `self` among `workers` workers (one link_free per destination).
  LinkModel(const LinkSpec& spec, int workers);

  // A message of `bytes` bytes leaves at time `t` (seconds, >= the previous Send's t) for
  // worker `to`: books the NIC and the link and returns the delivery time (the header's due).
  double Send(double t, int to, std::uint64_t bytes);

  // The receiver's clock after a message due at `due` arrives: it cannot have it earlier.
  static double Arrive(double clock, double due) { return clock > due ? clock : due; }

  // When this worker's NIC finishes its queued sends (its egress is idle from then on).
  double nic_free() const { return nic_free_; }

 private:
  double latency_s_;
  double seconds_per_byte_link_;  // 1 / bandwidth; 0 when unlimited
  double seconds_per_byte_nic_;   // 1 / nic; the link's when no nic was given
  double nic_free_ = 0;
  std::vector<double> link_free_;  // per destination worker
};

}  // namespace corral::internal
