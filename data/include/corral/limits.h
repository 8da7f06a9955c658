// Size limits: the one place where a size from outside (a flag, a file header, a cache, a
// model file, a generator's spec) is checked for overflow and against this machine's memory
// before anything is allocated for it.
//
//   corral::CheckMemory({rows, features, sizeof(float)}, corral::ErrorCode::kBadConfig,
//                       "--features 4611686018427387904", "the dense set");
//   // throws "--features 4611686018427387904: the dense set would need 74 EB; this machine
//   //         has 24 GB"
//
// The estimate multiplies in double precision, so a hostile product never wraps around into
// a small number that passes; the limit is the physical memory (sysconf), or the address-space
// limit (ulimit -v) when that is lower. An estimate is a lower bound of what the allocation
// needs: a size that passes may still fail later, one that fails could never have worked.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include <corral/error.h>

namespace corral {

// Feature indices (columns) are stored as uint32, so a dataset or a linear model has at most
// 2^32 features.
inline constexpr std::uint64_t kMaxFeatures = std::uint64_t{std::numeric_limits<std::uint32_t>::max()} + 1;

// Bytes this process may use: physical memory, or the address-space limit when lower.
std::uint64_t MemoryLimitBytes();

// "74 EB", "24 GB", "512 MB", "3 KB", "12 bytes" (decimal units, as disk and RAM are sold).
std::string FormatBytes(double bytes);

// Throws corral::Error(code) "SOURCE: WHAT would need N; this machine has M" (or "this process
// may use M (ulimit -v)") when the product of `factors` (counts and element sizes) exceeds
// MemoryLimitBytes().
void CheckMemory(std::initializer_list<double> factors, ErrorCode code, std::string_view source,
                 std::string_view what);

// Throws corral::Error(code) "SOURCE: N features, expected at most 2^32 (feature indices are
// 32-bit)" when count > kMaxFeatures.
void CheckFeatureCount(std::uint64_t count, ErrorCode code, std::string_view source);

// Throws corral::Error(code) "SOURCE: WHAT has N parameters, expected at most 2^32 (gradient
// indices are 32-bit)" when a model's parameter count (given as a double, so that a product
// that would overflow still compares) does not fit the 32-bit indices of a SparseGrad.
void CheckIndexable(double num_params, ErrorCode code, std::string_view source,
                    std::string_view what);

}  // namespace corral
