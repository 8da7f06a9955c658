// LIBSVM / SVMlight text reader, parsed in parallel chunks (data/src/text_pipeline.h).
//
// Tokens are split by hand and numbers parsed with std::from_chars: no locale, no per-token
// stream extraction, no allocation per token. Each chunk fills its own small CSR arrays; the
// in-order stage appends them to mremap-grown buffers that become the Dataset's storage.
#include <corral/libsvm.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/limits.h>
#include <corral/load.h>

#include "data/src/byte_source.h"
#include "data/src/dataset_access.h"
#include "data/src/formats.h"
#include "data/src/mapped_buffer.h"
#include "data/src/text_pipeline.h"
#include "data/src/text_util.h"

namespace corral {
namespace detail {
namespace {

struct LibsvmPart {
  std::vector<std::uint64_t> row_end;  // each row's end offset within this part
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::vector<float> label;
  std::uint64_t dimension = 0;  // largest column seen + 1

  void Clear() {
    row_end.clear();
    index.clear();
    value.clear();
    label.clear();
    dimension = 0;
  }

  void Entry(std::uint32_t column, float x) {
    index.push_back(column);
    value.push_back(x);
  }
  void EndRow(float y) {
    label.push_back(y);
    row_end.push_back(index.size());
  }
};

// The arrays a loaded LIBSVM set lives in (the Dataset's owner).
struct LibsvmStorage {
  MappedBuffer row_ptr, index, value, label;
};

// With one thread the parser writes straight into the final arrays: no per-chunk arrays to
// fill, fault in and copy. (With several, chunks finish out of order, so they need their own.)
struct DirectSink {
  LibsvmStorage& storage;
  std::uint64_t nnz = 0;
  std::uint64_t dimension = 0;

  void Entry(std::uint32_t column, float x) {
    storage.index.Push(column);
    storage.value.Push(x);
    ++nnz;
  }
  void EndRow(float y) {
    storage.label.Push(y);
    storage.row_ptr.Push(nnz);
  }
};

// Decimal digits only, at most 19 of them (no overflow); from_chars' generality costs more
// than the whole index on this path.
bool ParseIndexDigits(std::string_view text, std::uint64_t& out) {
  if (text.empty() || text.size() > 19) return ParseUnsigned(text, out);
  std::uint64_t v = 0;
  for (char c : text) {
    const auto digit = static_cast<unsigned>(c - '0');
    if (digit > 9) return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

// Parses a chunk line by line in one scan: tokens end at a blank, a '#' (the rest of the line
// is a comment) or '\n', so no separate pass looks for line ends. A '\r' right before a line
// end is dropped (CRLF files); anywhere else it belongs to its token, as in the line-based
// definition of the format.
class LineParser {
 public:
  explicit LineParser(const LoadOptions& options) : options_(options) {}

  // Parses the chunk into `out` and returns the number of '\n' in it.
  template <typename Sink>
  std::uint64_t ParseChunk(std::string_view text, Sink& out) {
    const char* p = text.data();
    end_ = p + text.size();
    std::uint64_t newlines = 0;
    while (p < end_) {
      line_number_ = newlines + 1;
      line_begin_ = p;
      p = ParseLine(p, out);
      if (p < end_) {  // stopped at a '\n'
        ++p;
        ++newlines;
      }
    }
    return newlines;
  }

 private:
  // The next token from `p` on this line, or false at the line's end (p then at '\n' or the
  // end of the chunk).
  bool NextToken(const char*& p, std::string_view& token) const {
    while (p < end_ && IsBlank(*p)) ++p;
    if (p == end_ || *p == '\n') return false;
    if (*p == '#') {
      const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end_ - p));
      p = nl == nullptr ? end_ : static_cast<const char*>(nl);
      return false;
    }
    const char* begin = p;
    while (p < end_ && !IsBlank(*p) && *p != '#' && *p != '\n') ++p;
    std::size_t length = static_cast<std::size_t>(p - begin);
    if ((p == end_ || *p == '\n') && begin[length - 1] == '\r') --length;  // CRLF
    if (length == 0) return NextToken(p, token);  // a lone "\r" before the line end
    token = std::string_view(begin, length);
    return true;
  }

  // Fast path for one `index:value` entry made of plain digits and a short decimal, the
  // common case: one pass over its bytes. False (p unchanged) for anything else, which the
  // general token path then parses or rejects with the right message.
  bool FastEntry(const char*& p, std::uint64_t& file_index, float& value) const {
    const char* q = p;
    std::uint64_t v = 0;
    int digits = 0;
    for (; q < end_ && static_cast<unsigned>(*q - '0') <= 9; ++q) {
      if (++digits > 19) return false;
      v = v * 10 + static_cast<unsigned>(*q - '0');
    }
    if (digits == 0 || q == end_ || *q != ':') return false;
    q = ScanSimpleFloat(q + 1, end_, value);
    if (q == nullptr) return false;
    if (q < end_ && !IsBlank(*q) && *q != '\n' && *q != '#') {
      if (*q != '\r' || (q + 1 < end_ && q[1] != '\n')) return false;
      ++q;  // CRLF
    }
    file_index = v;
    p = q;
    return true;
  }

  template <typename Sink>
  const char* ParseLine(const char* p, Sink& out) {
    std::string_view token;
    if (!NextToken(p, token)) return p;  // blank or comment-only line
    float label = 0;
    if (!ParseFloat(token, label)) {
      Fail("expected a finite numeric label, got " + Quote(token));
    }
    bool seen_feature = false;
    std::uint64_t previous = 0;
    while (true) {
      while (p < end_ && IsBlank(*p)) ++p;
      const char* entry = p;
      std::uint64_t fast_index = 0;
      float fast_value = 0;
      if (FastEntry(p, fast_index, fast_value)) {
        // The checks of the general path, for an index and value already parsed.
        const std::uint64_t column = options_.zero_based ? fast_index : fast_index - 1;
        if ((!options_.zero_based && fast_index == 0) || (seen_feature && fast_index <= previous) ||
            column > kMaxColumn || (options_.num_features != 0 && column >= options_.num_features)) {
          p = entry;  // the general path below reports it with the right words
        } else {
          out.Entry(static_cast<std::uint32_t>(column), fast_value);
          dimension_ = std::max<std::uint64_t>(dimension_, column + 1);
          previous = fast_index;
          seen_feature = true;
          continue;
        }
      }
      if (!NextToken(p, token)) break;
      const std::size_t colon = token.find(':');
      if (colon == std::string_view::npos) {
        Fail("expected index:value, got " + Quote(token) + At(token));
      }
      const std::string_view key = token.substr(0, colon);
      const std::string_view text = token.substr(colon + 1);
      if (key == "qid") {
        std::uint64_t qid = 0;
        if (!ParseUnsigned(text, qid)) {
          Fail("expected qid:<non-negative integer>, got " + Quote(token) + At(token));
        }
        continue;
      }
      const std::uint64_t file_index = ParseIndex(key, token);
      if (seen_feature && file_index <= previous) {
        Fail("expected indices in increasing order, got " + std::to_string(file_index) +
             " after " + std::to_string(previous) + At(token));
      }
      float value = 0;
      if (!ParseFloat(text, value)) {
        Fail("expected a finite number after the colon, got " + Quote(token) + At(token));
      }
      const std::uint64_t column = options_.zero_based ? file_index : file_index - 1;
      if (options_.num_features != 0 && column >= options_.num_features) {
        Fail("index " + std::to_string(file_index) + " is beyond num_features " +
             std::to_string(options_.num_features) + ", expected at most " +
             std::to_string(options_.num_features - (options_.zero_based ? 1 : 0)));
      }
      out.Entry(static_cast<std::uint32_t>(column), value);
      dimension_ = std::max<std::uint64_t>(dimension_, column + 1);
      previous = file_index;
      seen_feature = true;
    }
    out.EndRow(label);
    return p;
  }

  // The whole current line, found only when a message needs it.
  std::string_view Line() const {
    const void* nl = std::memchr(line_begin_, '\n', static_cast<std::size_t>(end_ - line_begin_));
    const char* stop = nl == nullptr ? end_ : static_cast<const char*>(nl);
    return {line_begin_, static_cast<std::size_t>(stop - line_begin_)};
  }

 private:
  // " (column C)": where the token starts, for long lines where a value is hard to find.
  std::string At(std::string_view token) const {
    return " (column " + std::to_string(ColumnOf(Line(), token)) + ")";
  }

  std::uint64_t ParseIndex(std::string_view key, std::string_view token) const {
    std::uint64_t file_index = 0;
    if (!ParseIndexDigits(key, file_index)) {
      Fail("expected a non-negative integer index before the colon, got " + Quote(token) +
           At(token));
    }
    if (!options_.zero_based && file_index == 0) {
      Fail("index 0 in " + Quote(token) + ": indices start at 1 (set zero_based for 0-based files)");
    }
    if (file_index - (options_.zero_based ? 0 : 1) > kMaxColumn) {
      Fail("index " + std::to_string(file_index) + " is too large, expected at most " +
           std::to_string(kMaxColumn + (options_.zero_based ? 0 : 1)));
    }
    return file_index;
  }

  // A NUL byte breaks some token, so it is looked for only here, off the fast path: it is
  // the clearest sign of a binary file and says so instead of quoting garbage.
  [[noreturn]] void Fail(std::string what) const {
    if (const std::size_t nul = FindNul(Line()); nul != std::string_view::npos) {
      what = "column " + std::to_string(nul + 1) +
             ": NUL byte, expected LIBSVM text (is this a binary file?)";
    }
    throw ParseFailure{line_number_, std::move(what)};
  }

  static constexpr std::uint64_t kMaxColumn = kMaxFeatures - 1;

 public:
  std::uint64_t dimension() const { return dimension_; }  // largest column seen + 1

 private:
  const LoadOptions& options_;
  std::uint64_t dimension_ = 0;
  const char* end_ = nullptr;         // end of the chunk
  const char* line_begin_ = nullptr;  // start of the current line
  std::uint64_t line_number_ = 0;     // within the chunk
};

}  // namespace

Dataset ParseLibsvmSource(ByteSource& source, const LoadOptions& options, bool allow_empty) {
  auto storage = std::make_shared<LibsvmStorage>();
  storage->row_ptr.Push<std::uint64_t>(0);
  std::uint64_t nnz = 0;
  std::uint64_t dimension = 0;
  const bool serial = ResolveThreads(options.threads) == 1;
  DirectSink direct{*storage};
  ParseTextChunks<LibsvmPart>(
      source,
      {.threads = options.threads, .chunk_bytes = options.chunk_bytes, .first_line = options.first_line},
      [&](const TextChunk& chunk, LibsvmPart& part) {
        LineParser parser(options);
        // Serial: chunks are parsed one after the other, in order, so writing the final
        // arrays from here is safe.
        if (serial) {
          const std::uint64_t lines = parser.ParseChunk(chunk.text(), direct);
          direct.dimension = std::max(direct.dimension, parser.dimension());
          return lines;
        }
        // Every non-zero takes at least 4 bytes ("1:1 "): reserving that bound means no
        // regrowth; capacity never written costs address space, not memory.
        part.index.reserve(chunk.size / 4);
        part.value.reserve(chunk.size / 4);
        const std::uint64_t lines = parser.ParseChunk(chunk.text(), part);
        part.dimension = parser.dimension();
        return lines;
      },
      [&](const LibsvmPart& part, const TextChunk&) {
        if (serial) return;
        for (std::uint64_t end : part.row_end) storage->row_ptr.Push<std::uint64_t>(nnz + end);
        storage->index.Append<std::uint32_t>(part.index);
        storage->value.Append<float>(part.value);
        storage->label.Append<float>(part.label);
        nnz += part.index.size();
        dimension = std::max(dimension, part.dimension);
      });
  if (serial) dimension = direct.dimension;
  if (storage->label.size() == 0 && !allow_empty) ThrowNoRows(source.name(), "LIBSVM");
  const CsrView view{
      .row_ptr = std::as_const(storage->row_ptr).As<std::uint64_t>(),
      .index = std::as_const(storage->index).As<std::uint32_t>(),
      .value = std::as_const(storage->value).As<float>(),
      .label = std::as_const(storage->label).As<float>(),
      .num_features = options.num_features != 0 ? options.num_features
                                                : static_cast<std::size_t>(dimension)};
  std::string name = source.name();
  return DatasetAccess::WrapParsedSparse(view, std::move(storage), std::move(name));
}

[[noreturn]] void ThrowNoRows(const std::string& name, std::string_view format) {
  throw Error(ErrorCode::kBadInput, name + ": no data rows (the file is empty or holds only "
                                           "comments and blank lines), expected at least one " +
                                           std::string(format) + " row");
}

}  // namespace detail

Dataset ParseLibsvm(std::istream& in, const std::string& name, const LibsvmOptions& options) {
  const auto source = detail::StreamSource(in, name);
  // The stream API keeps its historical contract: an empty stream is an empty dataset.
  return detail::ParseLibsvmSource(
      *source, {.num_features = options.num_features, .zero_based = options.zero_based},
      /*allow_empty=*/true);
}

Dataset ReadLibsvm(const std::string& path, const LibsvmOptions& options) {
  return LoadDataset(path, {.format = DataFormat::kLibsvm,
                            .num_features = options.num_features,
                            .zero_based = options.zero_based});
}

}  // namespace corral
