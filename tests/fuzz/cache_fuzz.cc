// libFuzzer target: the binary cache reader (ReadCache through LoadDataset, and ReadCacheRows
// for the rows of a rank: the second half). A forged cache must be refused with corral::Error
// or load as a valid, finite dataset. Inputs of a header's
// size or more get the checksum their bytes call for (SealCache), as a forger would write it,
// so that mutations reach the field-by-field checks behind it.
#include <cmath>
#include <string>

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/load.h>

#include "data/src/cache_rows.h"
#include "data/src/cache_seal.h"
#include "file_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = corral::fuzz::ScratchPath("cache");
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= 256) corral::detail::SealCache(bytes);
  corral::fuzz::WriteFile(path, bytes);
  const auto require_finite = [](const corral::Dataset& d) {
    for (const float y : d.labels()) {
      if (!std::isfinite(y)) std::abort();  // the reader promises finite labels and values
    }
    for (const float x : d.value()) {
      if (!std::isfinite(x)) std::abort();
    }
  };
  try {
    require_finite(corral::LoadDataset(path, {.format = corral::DataFormat::kCache, .threads = 1}));
  } catch (const corral::Error&) {
  }
  try {
    const auto half = [](std::size_t rows) {
      return corral::detail::RowRange{.first = rows / 2, .count = rows - rows / 2};
    };
    require_finite(corral::detail::ReadCacheRows(path, half, 1).rows);
  } catch (const corral::Error&) {
  }
  return 0;
}
