// LoadDataset: format detection and dispatch to the readers in data/src/.
#include <corral/load.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <corral/cache.h>
#include <corral/error.h>
#include <corral/limits.h>

#include "data/src/byte_source.h"
#include "data/src/cache_rows.h"
#include "data/src/formats.h"
#include "data/src/text_pipeline.h"
#include "data/src/text_util.h"

namespace corral {
namespace {

constexpr std::string_view kFormatNames[] = {"auto", "libsvm", "idx", "ratings", "csv", "cache"};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The extension that names the format: "a/b.CSV.gz" -> ".csv".
std::string FormatExtension(const std::string& path) {
  std::filesystem::path p(path);
  if (Lower(p.extension().string()) == ".gz") p = p.stem();
  return Lower(p.extension().string());
}

// The first data line decides between LIBSVM, ratings and CSV when nothing else did.
DataFormat SniffText(std::string_view head) {
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    if (line.find("::") != std::string_view::npos) return DataFormat::kRatings;
    if (line.find(',') != std::string_view::npos) {
      const auto commas = std::count(line.begin(), line.end(), ',');
      return commas == 2 || commas == 3 ? DataFormat::kRatings : DataFormat::kCsv;
    }
    std::string_view token;
    std::size_t tokens = 0;
    bool colon = false;
    while (detail::NextToken(line, token)) {
      ++tokens;
      colon = colon || token.find(':') != std::string_view::npos;
    }
    return !colon && (tokens == 3 || tokens == 4) ? DataFormat::kRatings : DataFormat::kLibsvm;
  }
  return DataFormat::kLibsvm;
}

DataFormat Detect(detail::ByteSource& source, const std::string& path) {
  const std::string_view magic = source.Peek(8);
  if (magic.size() == 8 && std::memcmp(magic.data(), "CORRALDS", 8) == 0) {
    if (source.compressed()) {
      throw Error(ErrorCode::kBadInput, path + ": a gzip-compressed Corral cache, expected an "
                                               "uncompressed one (caches are memory-mapped)");
    }
    return DataFormat::kCache;
  }
  if (magic.size() >= 4 && magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08) {
    return DataFormat::kIdx;
  }
  const std::string ext = FormatExtension(path);
  if (ext == ".csv") {
    // MovieLens' ratings.csv: "userId,movieId,rating,timestamp".
    const std::string_view head = source.Peek(256);
    const std::string first = Lower(std::string(head.substr(0, head.find('\n'))));
    return first.starts_with("user") ? DataFormat::kRatings : DataFormat::kCsv;
  }
  if (ext == ".data" || ext == ".dat" || ext == ".tsv" || ext == ".ratings") {
    return DataFormat::kRatings;
  }
  if (ext == ".svm" || ext == ".libsvm" || ext == ".svmlight") return DataFormat::kLibsvm;
  if (ext == ".cache") return DataFormat::kCache;
  if (ext == ".idx" || ext.ends_with("-ubyte")) return DataFormat::kIdx;
  return SniffText(source.Peek(64 * 1024));
}

// `csv_fields`: a CSV file's fields per row, 0 until its first row is read (ParseCsvSource).
Dataset ParseText(detail::ByteSource& source, DataFormat format, const LoadOptions& options,
                  std::size_t& csv_fields) {
  switch (format) {
    case DataFormat::kLibsvm:
      return detail::ParseLibsvmSource(source, options, /*allow_empty=*/false);
    case DataFormat::kRatings:
      return detail::ParseRatingsSource(source, options);
    case DataFormat::kCsv:
      return detail::ParseCsvSource(source, options, csv_fields);
    default:
      throw Error(ErrorCode::kBadConfig,
                  source.name() + ": format " + std::string(DataFormatName(format)) +
                      " cannot be parsed from text, expected libsvm, ratings or csv");
  }
}

// What LoadDataset does with a cache once read: options.num_features widens it (or refuses a
// narrower one), a ratings mapping renumbers its ids.
Dataset FinishCache(Dataset d, const std::string& path, const LoadOptions& options) {
  if (options.num_features != 0 && options.num_features != d.num_features()) {
    if (options.num_features < d.num_features()) {
      throw Error(ErrorCode::kBadInput,
                  path + ": " + std::to_string(d.num_features()) +
                      " features, expected at most num_features " +
                      std::to_string(options.num_features));
    }
    d = std::move(d).WithNumFeatures(options.num_features);
  }
  const RatingsInfo* train = options.ratings_mapping.get();
  const RatingsInfo* own = d.ratings();
  if (train != nullptr && own != nullptr && train != own) {
    const bool same = own->known_users == train->num_users &&
                      own->known_items == train->num_items &&
                      std::equal(train->user_ids.begin(), train->user_ids.end(),
                                 own->user_ids.begin(), own->user_ids.end()) &&
                      std::equal(train->item_ids.begin(), train->item_ids.end(),
                                 own->item_ids.begin(), own->item_ids.end());
    if (!same) d = detail::RemapRatings(d, *train);
  }
  return d;
}

Dataset LoadCache(const std::string& path, const LoadOptions& options) {
  return FinishCache(ReadCache(path, options.threads), path, options);
}

// Every reader's result passes here: a set whose rows hold only labels trains nothing, and is
// almost always a file read in the wrong format or with the wrong label column. (The empty
// set, which a cache may hold, has neither rows nor features.)
Dataset RequireFeatures(Dataset d) {
  if (d.rows() > 0 && d.num_features() == 0) {
    throw Error(ErrorCode::kBadInput,
                d.name() + ": 0 features (every row holds only a label), expected at least one "
                           "feature per row (the right --format or label column?)");
  }
  return d;
}

Dataset Load(const std::string& path, const LoadOptions& options) {
  CheckFeatureCount(options.num_features, ErrorCode::kBadConfig, path + ": num_features");
  if (options.format == DataFormat::kCache) return LoadCache(path, options);
  if (options.format == DataFormat::kIdx) return detail::ReadIdx(path, options);
  const auto source = detail::OpenFileSource(path);
  DataFormat format = options.format;
  if (format == DataFormat::kAuto) {
    try {
      format = Detect(*source, path);
    } catch (const detail::SourceError& e) {
      throw Error(e.code, path + ": " + e.what + " at the start: " + e.detail);
    }
  }
  if (format == DataFormat::kCache) return LoadCache(path, options);
  if (format == DataFormat::kIdx) return detail::ReadIdx(path, options);
  std::size_t csv_fields = 0;
  return ParseText(*source, format, options, csv_fields);
}

// Whether `text` has a line that is neither blank nor a '#' comment: a piece without one (the
// comments at the end of a file) holds no rows to hand out. Stops at the first such line.
bool HasDataLine(std::string_view text) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') return true;
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return false;
}

// A text file's next piece: every whole line of the next `piece_bytes` or more (a line longer
// than that stays whole), and at least two lines at the start of the file (a header line
// alone holds no rows). `text` holds what was read and not yet handed out; returns how many
// of its bytes form the piece (all at the end of the file).
std::size_t NextPiece(detail::ByteSource& source, std::string& text, std::size_t piece_bytes,
                      std::uint64_t lines_before, bool& end) {
  // The end of the last line within the piece size, else of the line that crosses it; at the
  // file's start, of the second line at least. 0: more text is needed.
  const auto cut = [&]() -> std::size_t {
    std::size_t nl = text.rfind('\n', piece_bytes - 1);
    if (nl == std::string::npos) nl = text.find('\n', piece_bytes);
    if (nl != std::string::npos && lines_before == 0 && detail::CountLines({text.data(), nl + 1}) < 2) {
      nl = text.find('\n', nl + 1);
    }
    return nl == std::string::npos ? 0 : nl + 1;
  };
  while (true) {
    if (end) return text.size();
    if (text.size() >= piece_bytes) {
      if (const std::size_t at = cut(); at > 0) return at;
    }
    const std::size_t have = text.size();
    // Up to the piece size, then (a line longer than it) growing by half.
    const std::size_t want = have < piece_bytes ? piece_bytes - have : have / 2 + 4096;
    text.resize(have + want);
    std::size_t got = 0;
    try {
      got = source.Read(text.data() + have, want);
    } catch (const detail::SourceError& e) {
      throw Error(e.code, source.name() + ": " + e.what + " after line " +
                              std::to_string(lines_before + detail::CountLines({text.data(), have})) +
                              ": " + e.detail);
    }
    text.resize(have + got);
    end = got == 0;
  }
}

}  // namespace

void ForEachPiece(const std::string& path, const LoadOptions& options, std::size_t piece_bytes,
                  const std::function<void(const Dataset& piece, std::size_t first_row)>& fn) {
  if (piece_bytes == 0) {
    throw Error(ErrorCode::kBadConfig, path + ": pieces of 0 bytes, expected at least 1");
  }
  CheckFeatureCount(options.num_features, ErrorCode::kBadConfig, path + ": num_features");
  DataFormat format = options.format;
  std::unique_ptr<detail::ByteSource> source;
  if (format != DataFormat::kCache && format != DataFormat::kIdx) {
    source = detail::OpenFileSource(path);
    if (format == DataFormat::kAuto) {
      try {
        format = Detect(*source, path);
      } catch (const detail::SourceError& e) {
        throw Error(e.code, path + ": " + e.what + " at the start: " + e.detail);
      }
    }
  }
  LoadOptions piece_options = options;
  piece_options.format = format;
  if (format == DataFormat::kCache || format == DataFormat::kIdx) {
    // Memory-mapped (cache) or small (IDX): handed out in ranges of rows of about piece_bytes.
    source.reset();
    const Dataset whole = LoadDataset(path, piece_options);
    const double row_bytes =
        (12.0 * static_cast<double>(whole.nnz()) + 4.0 * static_cast<double>(whole.rows())) /
        static_cast<double>(std::max<std::size_t>(1, whole.rows()));
    const auto rows = static_cast<std::size_t>(
        std::max(1.0, static_cast<double>(piece_bytes) / std::max(1.0, row_bytes)));
    for (std::size_t begin = 0; begin < whole.rows(); begin += rows) {
      fn(whole.Rows(begin, std::min(whole.rows(), begin + rows)), begin);
    }
    return;
  }
  std::string text;
  std::size_t csv_fields = 0;  // the first piece's, which every later piece must have too
  std::uint64_t line = options.first_line;
  std::size_t row = 0;
  bool end = false;
  while (!end || !text.empty()) {
    const std::size_t cut = NextPiece(*source, text, piece_bytes, line - 1, end);
    const std::string_view piece(text.data(), cut);
    piece_options.first_line = line;
    if (HasDataLine(piece)) {
      const auto memory = detail::MemorySource(piece, path);
      const Dataset rows = RequireFeatures(ParseText(*memory, format, piece_options, csv_fields));
      fn(rows, row);
      row += rows.rows();
    }
    line += detail::CountLines(piece);
    text.erase(0, cut);
  }
}

DataFormat ParseDataFormat(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kFormatNames); ++i) {
    if (name == kFormatNames[i]) return static_cast<DataFormat>(i);
  }
  throw Error(ErrorCode::kBadConfig, "unknown data format '" + std::string(name) +
                                         "', expected auto, libsvm, idx, ratings, csv or cache");
}

std::string_view DataFormatName(DataFormat format) {
  return kFormatNames[static_cast<std::size_t>(format)];
}

DataFormat DetectFormat(const std::string& path) {
  const auto source = detail::OpenFileSource(path);
  try {
    return Detect(*source, path);
  } catch (const detail::SourceError& e) {
    throw Error(e.code, path + ": " + e.what + ": " + e.detail);
  }
}

Dataset RatingsFromArrays(std::span<const std::uint64_t> users,
                          std::span<const std::uint64_t> items, std::span<const float> ratings,
                          const RatingsInfo* train, const std::string& name) {
  if (users.size() != items.size() || users.size() != ratings.size()) {
    throw Error(ErrorCode::kBadInput,
                name + ": " + std::to_string(users.size()) + " users, " +
                    std::to_string(items.size()) + " items and " + std::to_string(ratings.size()) +
                    " ratings, expected one of each per rating");
  }
  if (ratings.empty()) throw Error(ErrorCode::kBadInput, name + ": no ratings");
  for (std::size_t r = 0; r < ratings.size(); ++r) {
    if (!std::isfinite(ratings[r])) {
      throw Error(ErrorCode::kBadInput, name + ": rating " + std::to_string(r) +
                                            " is not finite, expected a finite numeric rating");
    }
  }
  return detail::BuildRatings(users, items, ratings, train, name);
}

Dataset LoadDataset(const std::string& path, const LoadOptions& options) {
  return RequireFeatures(Load(path, options));
}

Dataset ParseDataset(std::string_view text, const std::string& name, const LoadOptions& options) {
  CheckFeatureCount(options.num_features, ErrorCode::kBadConfig, name + ": num_features");
  const auto source = detail::MemorySource(text, name);
  DataFormat format = options.format;
  if (format == DataFormat::kAuto) format = SniffText(text.substr(0, 64 * 1024));
  std::size_t csv_fields = 0;
  return RequireFeatures(ParseText(*source, format, options, csv_fields));
}

detail::CacheRows detail::LoadCacheRows(const std::string& path, const LoadOptions& options,
                                        const std::function<RowRange(std::size_t)>& pick) {
  CacheRows read = ReadCacheRows(path, pick, options.threads);
  read.rows = FinishCache(std::move(read.rows), path, options);
  return read;
}

}  // namespace corral
