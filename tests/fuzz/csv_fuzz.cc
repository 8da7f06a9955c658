// libFuzzer target: the CSV parser (see parse_fuzz.h).
#include "parse_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return corral::fuzz::FuzzOne(data, size, corral::DataFormat::kCsv);
}
