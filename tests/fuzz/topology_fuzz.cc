// libFuzzer target: the `file:PATH` topology reader and the analysis of what it builds. Input:
// one byte for the worker count (1 .. 64), then the edge-list file.
#include <string>

#include <corral/error.h>
#include <corral/topology.h>

#include "file_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static const std::string path = corral::fuzz::ScratchPath("edges");
  const int workers = 1 + data[0] % 64;
  corral::fuzz::WriteFile(path, {reinterpret_cast<const char*>(data + 1), size - 1});
  try {
    const corral::Topology t = corral::MakeTopology("file:" + path, workers);
    const corral::TopologyReport r = corral::Analyze(t);
    if (r.workers != workers) std::abort();
  } catch (const corral::Error&) {
  }
  return 0;
}
