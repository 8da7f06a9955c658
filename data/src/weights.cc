// LoadWeights: per-row sample weights from a text file (--weights), one number per line.
#include <corral/load.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <corral/error.h>

#include "data/src/byte_source.h"
#include "data/src/text_util.h"

namespace corral {
namespace {

// Calls fn(line, number) for every line of `source` (numbered from 1, '\r' and the newline
// removed), reading it in blocks so a file of any length takes one block of memory.
template <typename Fn>
void ForEachTextLine(detail::ByteSource& source, Fn&& fn) {
  constexpr std::size_t kBlock = 1 << 20;
  std::string block(kBlock, '\0');
  std::string carry;  // a line cut by the block's end
  std::uint64_t number = 0;
  const auto emit = [&](std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(line, ++number);
  };
  while (true) {
    std::size_t got = 0;
    try {
      got = source.Read(block.data(), block.size());
    } catch (const detail::SourceError& e) {
      throw Error(e.code, source.name() + ": " + e.what + " after line " + std::to_string(number) + ": " +
                              e.detail);
    }
    if (got == 0) break;
    std::string_view text(block.data(), got);
    for (std::size_t newline; (newline = text.find('\n')) != std::string_view::npos;) {
      if (carry.empty()) {
        emit(text.substr(0, newline));
      } else {
        carry.append(text.substr(0, newline));
        emit(carry);
        carry.clear();
      }
      text.remove_prefix(newline + 1);
    }
    if (carry.size() + text.size() > kBlock) {
      throw Error(ErrorCode::kBadInput, source.name() + ": line " + std::to_string(number + 1) +
                                            " is longer than " + std::to_string(kBlock) +
                                            " bytes, expected one weight per line");
    }
    carry.append(text);
  }
  if (!carry.empty()) emit(carry);
}

// A first line is a column name when none of its words (split at blanks and commas) is a
// number: "weight" is, "1 2" is a malformed weight.
bool IsHeader(std::string_view line) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t end = std::min(line.find_first_of(" \t,", at), line.size());
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return detail::IsHeaderLine(words.data(), words.size());
}

}  // namespace

std::vector<float> LoadWeights(const std::string& path, std::size_t rows, std::size_t first,
                               std::size_t count) {
  if (first > rows) {
    throw Error(ErrorCode::kBadConfig, path + ": weights from row " + std::to_string(first) +
                                           ", expected a row below " + std::to_string(rows));
  }
  count = std::min(count, rows - first);
  std::vector<float> weights;
  weights.reserve(count);  // at most the set's own rows: never sized from the file
  std::size_t seen = 0;    // weights read so far (data lines)
  bool any = false;
  const std::unique_ptr<detail::ByteSource> source = detail::OpenFileSource(path);
  ForEachTextLine(*source, [&](std::string_view line, std::uint64_t number) {
    if (number == 1) detail::StripByteOrderMark(line);
    while (!line.empty() && detail::IsBlank(line.front())) line.remove_prefix(1);
    while (!line.empty() && detail::IsBlank(line.back())) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') return;
    float w = 0;
    if (!detail::ParseFloat(line, w)) {
      if (number == 1 && IsHeader(line)) return;  // a column name
      throw Error(ErrorCode::kBadInput, path + ":" + std::to_string(number) + ": expected a weight (a finite number >= 0), got " + detail::Quote(line));
    }
    if (w < 0.0f) {
      throw Error(ErrorCode::kBadInput, path + ":" + std::to_string(number) + ": weight " + detail::Quote(line) + " is negative, expected a finite number >= 0");
    }
    if (seen == rows) {
      throw Error(ErrorCode::kBadInput, path + ":" + std::to_string(number) + ": more weights than the " +
                                            std::to_string(rows) + " rows of the training set, expected one weight per row");
    }
    if (seen >= first && seen - first < count) weights.push_back(w);
    any |= w > 0.0f;
    ++seen;
  });
  if (seen != rows) {
    throw Error(ErrorCode::kBadInput, path + ": " + std::to_string(seen) + " weights for the " +
                                          std::to_string(rows) + " rows of the training set, expected one weight per row");
  }
  if (!any) throw Error(ErrorCode::kBadInput, path + ": every weight is 0, expected at least one above 0");
  return weights;
}

}  // namespace corral
