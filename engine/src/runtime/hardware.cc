#include "engine/src/runtime/hardware.h"

#include <hwloc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <corral/error.h>
#include <corral/placement.h>

namespace corral::internal {
namespace {

// Level names (besides pu) of hwloc's synthetic syntax that we pass on; whether the levels of a
// description nest is hwloc's to check.
constexpr std::array<std::string_view, 17> kLevels{
    "pack", "package", "socket", "group", "die",  "numa", "numanode", "node", "l5",
    "l4",   "l3",      "l2",     "l1",    "l3i",  "l2i",  "l1i",      "core"};
constexpr std::string_view kExpected =
    "expected synthetic:\"LEVEL:COUNT ...\" from the largest level to the smallest, e.g. "
    "synthetic:\"pack:2 numa:4 l3:2 core:8 pu:2\" (levels: pack, group, die, numa, l5..l1, l3i..l1i, "
    "core, pu), or xml:FILE";
// An XML topology of the largest machines is a few MB; more is not a topology.
constexpr std::uintmax_t kMaxXmlBytes = 64u << 20;

[[noreturn]] void Fail(std::string_view spec, const std::string& why) {
  throw Error(ErrorCode::kBadConfig, "--hardware '" + std::string(spec) + "': " + why);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The text inside one pair of surrounding double quotes, as a shell would leave it.
std::string_view Unquoted(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// This machine's topology, loaded by the first call and kept for the rest of the process (null
// when hwloc cannot read it). Loading costs 5-40 ms here (hwloc opens its plugins, reads
// /sys): paid once, not by every run, which matters to an embedder or Python session that
// trains many small models. Never destroyed: a run's workers may still be binding when a
// static destructor would run. It is the machine as the process saw it at the first call (a
// later change of the process's CPU affinity is not seen). Thread-safe: a function-local
// static, and afterwards only read (hwloc's queries and binding calls do not modify it).
hwloc_topology* ThisMachine() {
  static hwloc_topology* const machine = [] {
    hwloc_topology* topology = nullptr;
    if (hwloc_topology_init(&topology) != 0) return static_cast<hwloc_topology*>(nullptr);
    if (hwloc_topology_load(topology) != 0) {
      hwloc_topology_destroy(topology);
      return static_cast<hwloc_topology*>(nullptr);
    }
    return topology;
  }();
  return machine;
}

}  // namespace

std::string CheckedSyntheticLevels(std::string_view levels) {
  const std::string spec = "synthetic:" + std::string(levels);
  std::istringstream in{std::string(Unquoted(levels))};
  std::string token;
  std::string out;
  long threads = 1;
  bool last_is_pu = false;
  int count_levels = 0;
  while (in >> token) {
    if (last_is_pu) Fail(spec, "'" + token + "' follows pu, the smallest level; " + std::string(kExpected));
    const std::size_t colon = token.find(':');
    const std::string type = Lower(std::string_view(token).substr(0, colon));
    const bool known = type == "pu" || std::find(kLevels.begin(), kLevels.end(), type) != kLevels.end();
    if (colon == std::string::npos || !known) {
      Fail(spec, "'" + token + "' is not LEVEL:COUNT with a known level; " + std::string(kExpected));
    }
    const std::string_view digits = std::string_view(token).substr(colon + 1);
    long count = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || count < 1) {
      Fail(spec, "'" + token + "': the count must be a whole number >= 1");
    }
    if (count > kMaxDescribedHardwareThreads / threads) {
      Fail(spec, "describes more than " + std::to_string(kMaxDescribedHardwareThreads) +
                     " hardware threads (the most Corral plans for)");
    }
    threads *= count;
    last_is_pu = type == "pu";
    out += (out.empty() ? "" : " ") + token;
    ++count_levels;
  }
  if (count_levels == 0) Fail(spec, "no levels; " + std::string(kExpected));
  if (!last_is_pu) out += " pu:1";  // hwloc's syntax ends with the PUs: one per core
  return out;
}

Hardware::Hardware(std::string_view spec) {
  std::string synthetic;
  std::string xml;
  if (spec.starts_with("synthetic:")) {
    synthetic = CheckedSyntheticLevels(spec.substr(10));
  } else if (spec.starts_with("xml:")) {
    xml = spec.substr(4);
    std::error_code ec;
    if (xml.empty()) Fail(spec, "expected xml:FILE, a topology written by `lstopo FILE.xml`");
    const std::uintmax_t size = std::filesystem::file_size(xml, ec);
    if (ec || !std::ifstream(xml).good()) Fail(spec, "cannot read " + xml);
    if (size > kMaxXmlBytes) {
      Fail(spec, xml + " has " + std::to_string(size) + " bytes; a topology XML has at most " +
                     std::to_string(kMaxXmlBytes >> 20) + " MB");
    }
  } else if (!spec.empty()) {
    Fail(spec, "unknown kind of hardware description; " + std::string(kExpected));
  }
  if (spec.empty()) {
    topology_ = ThisMachine();
    return;  // null: this machine unreadable, the run is unplaced (Placement reports it)
  }
  if (hwloc_topology_init(&topology_) != 0) {
    topology_ = nullptr;
    Fail(spec, "hwloc could not start (hwloc_topology_init failed)");
  }
  int rc = 0;
  if (!synthetic.empty()) {
    rc = hwloc_topology_set_synthetic(topology_, synthetic.c_str());
  } else {
    rc = hwloc_topology_set_xml(topology_, xml.c_str());
  }
  if (rc == 0) rc = hwloc_topology_load(topology_);
  if (rc != 0) {
    hwloc_topology_destroy(topology_);
    topology_ = nullptr;
    if (!synthetic.empty()) {
      Fail(spec, "hwloc refused \"" + synthetic + "\" (each level must divide the one above it " +
                     "into parts, from the largest to the smallest)");
    }
    Fail(spec, xml + " is not a topology XML hwloc can read (write one with `lstopo FILE.xml`)");
  }
  owned_ = true;
  simulated_ = true;
  name_ = spec;
}

Hardware::~Hardware() {
  if (owned_) hwloc_topology_destroy(topology_);
}

}  // namespace corral::internal
