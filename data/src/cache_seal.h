// SealCache: writes the checksum a cache file's bytes call for into its header (internal). The
// fuzz target uses it, as a forger would, so that its mutations reach the reader's field
// checks instead of all stopping at the checksum.
#pragma once

#include <span>

namespace corral::detail {

// \pre file.size() >= the 256-byte cache header.
void SealCache(std::span<char> file);

}  // namespace corral::detail
