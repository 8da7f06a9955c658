// Small helpers shared by the text parsers: token splitting, number parsing without locale or
// allocation (std::from_chars), and quoting tokens in error messages.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace corral::detail {

// Tokens are quoted in messages; a runaway token (a binary file, a missing newline) is cut so
// the message stays one readable line, and control bytes are shown as '?'.
inline std::string Quote(std::string_view token) {
  constexpr std::size_t kMaxShown = 40;
  // Appended piece by piece: "'" + std::string(...) trips a false -Wrestrict in GCC 12 at -O3.
  std::string quoted(1, '\'');
  for (char c : token.substr(0, kMaxShown)) {
    const auto u = static_cast<unsigned char>(c);
    quoted.push_back(u < 0x20 || u == 0x7f ? '?' : c);
  }
  if (token.size() > kMaxShown) quoted.append("...");
  quoted.push_back('\'');
  return quoted;
}

inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Clinger's fast path, for floats: a decimal with at most 7 significant digits (mantissa
// below 2^24) and a power of ten up to 10^10 (exact in a float) is m * 10^e or m / 10^-e with
// both operands exact, so one IEEE operation rounds it correctly: the same bits as
// std::from_chars. Anything else (more digits, inf, nan, odd syntax) returns false and takes
// the general path. Most LIBSVM values ("1", "-0.891304", "2.5e-3") are fast.
// ScanSimpleFloat parses such a number at the start of [p, end) and returns the position
// after it, or nullptr.
inline const char* ScanSimpleFloat(const char* p, const char* end, float& out) {
  static constexpr float kPow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                     1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  const bool negative = p != end && *p == '-';
  if (negative) ++p;
  std::uint32_t mantissa = 0;
  int digits = 0;  // significant digits taken (leading zeros skipped)
  int scale = 0;   // digits after the point
  bool any = false;
  for (; p != end && static_cast<unsigned>(*p - '0') <= 9; ++p) {
    any = true;
    if (mantissa == 0 && *p == '0') continue;
    if (++digits > 7) return nullptr;
    mantissa = mantissa * 10 + static_cast<std::uint32_t>(*p - '0');
  }
  if (p != end && *p == '.') {
    for (++p; p != end && static_cast<unsigned>(*p - '0') <= 9; ++p) {
      any = true;
      ++scale;
      if (mantissa == 0 && *p == '0') continue;
      if (++digits > 7) return nullptr;
      mantissa = mantissa * 10 + static_cast<std::uint32_t>(*p - '0');
    }
  }
  if (!any) return nullptr;
  int exponent = 0;
  if (p != end && (*p == 'e' || *p == 'E')) {
    ++p;
    const bool minus = p != end && *p == '-';
    if (p != end && (*p == '-' || *p == '+')) ++p;
    if (p == end || static_cast<unsigned>(*p - '0') > 9) return nullptr;
    for (; p != end && static_cast<unsigned>(*p - '0') <= 9; ++p) {
      if (exponent > 100) return nullptr;
      exponent = exponent * 10 + (*p - '0');
    }
    if (minus) exponent = -exponent;
  }
  const int e = exponent - scale;
  if (e < -10 || e > 10) {
    if (mantissa != 0) return nullptr;
    out = negative ? -0.0f : 0.0f;
    return p;
  }
  const auto m = static_cast<float>(mantissa);  // exact: below 2^24
  const float magnitude = e >= 0 ? m * kPow10[e] : m / kPow10[-e];
  if (!(magnitude <= 3.4028234e38f)) return nullptr;  // overflow: let from_chars decide
  out = negative ? -magnitude : magnitude;
  return p;
}

inline bool ParseSimpleFloat(std::string_view text, float& out) {
  return ScanSimpleFloat(text.data(), text.data() + text.size(), out) == text.data() + text.size();
}

// Parses a whole token as a finite float. LIBSVM files write "+1", which from_chars rejects,
// so one leading '+' is dropped (but not "+-1" or "++1").
inline bool ParseFloat(std::string_view text, float& out) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '+' && text[1] != '-') {
    text.remove_prefix(1);
  }
  if (ParseSimpleFloat(text, out)) return true;
  const char* first = text.data();
  const char* last = first + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec == std::errc::result_out_of_range) {
    // libstdc++ reports float underflow (1e-50) as out of range too. Such values are legal
    // and round to zero or a subnormal, so re-parse as double and keep them; overflow stays
    // an error.
    double wide = 0;
    auto [wide_ptr, wide_ec] = std::from_chars(first, last, wide);
    if (wide_ec != std::errc() || wide_ptr != last ||
        std::fabs(wide) > std::numeric_limits<float>::max()) {
      return false;
    }
    out = static_cast<float>(wide);
    return true;
  }
  return ec == std::errc() && ptr == last && !text.empty() && std::isfinite(out);
}

inline bool ParseUnsigned(std::string_view text, std::uint64_t& out) {
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, out);
  return ec == std::errc() && ptr == last && !text.empty();
}

// A first line may name the columns (ratings.csv: "userId,movieId,rating,timestamp"): it is
// taken as a header only when none of its fields is a number, so a damaged data line ("l 2 5"
// with a letter for a digit) is reported as an error instead of silently skipped.
inline bool IsHeaderLine(const std::string_view* fields, std::size_t count) {
  float x = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (ParseFloat(fields[i], x)) return false;
  }
  return true;
}

// Drops a UTF-8 byte order mark (EF BB BF), which some editors put at the start of a file.
inline void StripByteOrderMark(std::string_view& line) {
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
}

// Splits off the next space- or tab-separated token; false when only blanks remain.
inline bool NextToken(std::string_view& rest, std::string_view& token) {
  std::size_t begin = 0;
  while (begin < rest.size() && IsBlank(rest[begin])) ++begin;
  if (begin == rest.size()) {
    rest = {};
    return false;
  }
  std::size_t end = begin;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return true;
}

// 1-based column of `token` within `line` (both views into the same buffer).
inline std::size_t ColumnOf(std::string_view line, std::string_view token) {
  return static_cast<std::size_t>(token.data() - line.data()) + 1;
}

// Where a NUL byte sits in a line, if any: text formats never contain one, binary files
// almost always do, so it is the clearest sign of "this is not a text file".
inline std::size_t FindNul(std::string_view line) { return line.find('\0'); }

}  // namespace corral::detail
