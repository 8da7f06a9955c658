// The shared body of the parser fuzz targets: parse the input with default chunking and with
// tiny chunks; both must agree exactly (same data, or the same error message), and nothing
// but corral::Error may escape. Any crash, sanitizer report or disagreement is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/load.h>

namespace corral::fuzz {

// "ok:<rows>:<nnz>:<hash>" or "error:<message>": a digest two parses can be compared by.
inline std::string Digest(std::string_view text, LoadOptions options) {
  try {
    const Dataset d = ParseDataset(text, "fuzz", options);
    // The loaders skip re-validating what they built; check here that they built it right
    // (a validation failure is not a corral::Error here: it aborts as a finding).
    try {
      Dataset({d.row_ptr().begin(), d.row_ptr().end()}, {d.index().begin(), d.index().end()},
              {d.value().begin(), d.value().end()}, {d.labels().begin(), d.labels().end()},
              d.is_dense() ? d.num_features() : d.num_features(), "check");
    } catch (const Error& e) {
      if (!d.is_dense()) {
        std::fprintf(stderr, "parser built an invalid dataset: %s\n", e.what());
        std::abort();
      }
    }
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over every array
    const auto mix = [&h](const void* p, std::size_t bytes) {
      const auto* b = static_cast<const unsigned char*>(p);
      for (std::size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    };
    mix(d.row_ptr().data(), d.row_ptr().size_bytes());
    mix(d.index().data(), d.index().size_bytes());
    mix(d.value().data(), d.value().size_bytes());
    mix(d.labels().data(), d.labels().size_bytes());
    return "ok:" + std::to_string(d.rows()) + ":" + std::to_string(d.nnz()) + ":" +
           std::to_string(d.num_features()) + ":" + std::to_string(h);
  } catch (const Error& e) {
    return std::string("error:") + e.what();
  }
}

inline int FuzzOne(const std::uint8_t* data, std::size_t size, DataFormat format) {
  if (size == 0) return 0;
  // The first byte picks the options; the rest is the file.
  const std::uint8_t knobs = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  LoadOptions options{.format = format, .threads = 1};
  if (format == DataFormat::kLibsvm) {
    options.zero_based = (knobs & 1) != 0;
    options.num_features = (knobs & 2) != 0 ? (knobs >> 2) : 0;
  }
  const std::string whole = Digest(text, options);
  options.chunk_bytes = 1 + (knobs % 13);
  const std::string chunked = Digest(text, options);
  if (whole != chunked) {
    std::fprintf(stderr, "chunked parse differs:\n  whole:   %s\n  chunked: %s\n", whole.c_str(),
                 chunked.c_str());
    std::abort();
  }
  return 0;
}

}  // namespace corral::fuzz
