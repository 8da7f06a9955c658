// The per-format readers behind LoadDataset (internal).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <corral/dataset.h>
#include <corral/load.h>

#include "data/src/byte_source.h"

namespace corral::detail {

Dataset ParseLibsvmSource(ByteSource& source, const LoadOptions& options, bool allow_empty);
Dataset ParseRatingsSource(ByteSource& source, const LoadOptions& options);
// `fields`: the file's fields per row, set from its first row when 0 (so that the pieces of a
// file read in pieces agree on it as its rows do).
Dataset ParseCsvSource(ByteSource& source, const LoadOptions& options, std::size_t& fields);
Dataset ReadIdx(const std::string& path, const LoadOptions& options);

// A ratings set from triplets of original ids (in `train`'s mapping when given).
Dataset BuildRatings(std::span<const std::uint64_t> users, std::span<const std::uint64_t> items,
                     std::span<const float> ratings, const RatingsInfo* train,
                     const std::string& name);

// A ratings set re-expressed in `train`'s id mapping (for a cache written without it).
Dataset RemapRatings(const Dataset& data, const RatingsInfo& train);

// "NAME: no data rows (...), expected at least one FORMAT row".
[[noreturn]] void ThrowNoRows(const std::string& name, std::string_view format);

}  // namespace corral::detail
