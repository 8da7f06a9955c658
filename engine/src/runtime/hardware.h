// Hardware: the machine a run plans for, as a loaded hwloc topology: this machine, or a
// description of another (--hardware synthetic:SPEC or xml:FILE, corral/placement.h) so that
// users and tests can see what Corral would do on a server they do not have.
//
// This machine's topology is loaded once per process and shared by every Hardware("") (see
// ThisMachine in hardware.cc); a description is loaded by each Hardware that names it.
//
// Thread safety: construct and destroy on one thread; the const queries (and hwloc's read-only
// calls on topology()) may then run on any threads at once.
#pragma once

#include <string>
#include <string_view>

struct hwloc_topology;

namespace corral::internal {

class Hardware {
 public:
  // Loads `spec` ("" for this machine). Throws corral::Error (kBadConfig) naming --hardware:
  // an unknown kind, a malformed or oversized synthetic description, an unreadable or
  // malformed XML file. When hwloc cannot read this machine, topology() is null.
  explicit Hardware(std::string_view spec);
  ~Hardware();
  Hardware(const Hardware&) = delete;
  Hardware& operator=(const Hardware&) = delete;

  hwloc_topology* topology() const { return topology_; }  // null: this machine unreadable
  // A description, not this machine: nothing may be bound to it (hwloc would accept the call
  // and bind nothing).
  bool simulated() const { return simulated_; }
  // "this machine" or the spec as given.
  const std::string& name() const { return name_; }

 private:
  hwloc_topology* topology_ = nullptr;
  bool owned_ = false;  // a description's topology, destroyed with this; else this machine's
  bool simulated_ = false;
  std::string name_ = "this machine";
};

// The synthetic description hwloc is given for `levels` (the part after "synthetic:"): checked
// level by level (TYPE:COUNT with a known TYPE and 1 <= COUNT), at most
// kMaxDescribedHardwareThreads hardware threads in all, and " pu:1" appended when the last
// level is not pu. Throws kBadConfig naming --hardware and the offending level. (Exposed for
// its test.)
std::string CheckedSyntheticLevels(std::string_view levels);

}  // namespace corral::internal
