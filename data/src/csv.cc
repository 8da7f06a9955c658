// Dense CSV reader: numbers separated by commas, one column the label.
//
// Every row must have as many fields as the first line of the file. A chunk parsed in
// parallel does not know that count, so it checks its rows against its own first row and
// reports that row's count; the in-order stage compares it with the file's before raising
// anything the chunk found, so the first inconsistent row of the file is the one reported.
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/load.h>

#include "data/src/formats.h"
#include "data/src/mapped_buffer.h"
#include "data/src/text_pipeline.h"
#include "data/src/text_util.h"

namespace corral::detail {
namespace {

struct CsvPart {
  std::vector<float> values;  // features only, row-major
  std::vector<float> labels;
  std::vector<float> weights;        // with a weight column
  std::size_t fields = 0;            // fields in this chunk's first row (0: no row)
  std::uint64_t first_row_line = 0;  // that row's line
  std::optional<ParseFailure> failure;  // raised after the field count was compared

  void Clear() {
    values.clear();
    labels.clear();
    weights.clear();
    fields = 0;
    first_row_line = 0;
    failure.reset();
  }
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// Splits on commas; fields keep views into `line`.
void SplitFields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = line.find(',', at);
    fields.push_back(Trim(line.substr(at, comma == std::string_view::npos ? std::string_view::npos
                                                                         : comma - at)));
    if (comma == std::string_view::npos) return;
    at = comma + 1;
  }
}

class CsvChunkParser {
 public:
  // `weight_column`: the weight's column (ResolveWeightColumn), or npos for none.
  CsvChunkParser(const LoadOptions& options, std::size_t weight_column, CsvPart& out)
      : options_(options), out_(out), weight_column_(weight_column) {}

  // `first_line`: this is line 1 of the file, which may be a header.
  void Line(std::string_view line, std::uint64_t number, bool first_line) {
    if (first_line) StripByteOrderMark(line);
    const std::string_view whole = line;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const std::size_t nul = FindNul(line); nul != std::string_view::npos) {
      throw ParseFailure{number, "column " + std::to_string(nul + 1) +
                                     ": NUL byte, expected CSV text (is this a binary file?)"};
    }
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank line
    SplitFields(line, fields_);
    if (out_.fields == 0) {
      out_.fields = fields_.size();
      out_.first_row_line = number;
      label_column_ = ResolveLabelColumn(number);
      if (weight_column_ != std::string_view::npos && weight_column_ >= fields_.size()) {
        throw ParseFailure{number, "weight column " + Quote(options_.csv_weight_column) + " is outside the " +
                                       std::to_string(fields_.size()) + " fields"};
      }
      if (weight_column_ == label_column_) {
        throw ParseFailure{number, "weight column " + Quote(options_.csv_weight_column) +
                                       " is the label's column, expected another"};
      }
    } else if (fields_.size() != out_.fields) {
      throw ParseFailure{number, "expected " + std::to_string(out_.fields) + " fields, got " +
                                     std::to_string(fields_.size())};
    }
    if (first_line && IsHeaderLine(fields_.data(), fields_.size())) return;
    float label = 0;
    float weight = 1;
    for (std::size_t c = 0; c < fields_.size(); ++c) {
      const std::string_view field = fields_[c];
      float x = 0;
      if (!ParseFloat(field, x)) {
        const std::size_t column = field.empty() ? 0 : ColumnOf(whole, field);
        throw ParseFailure{number, "field " + std::to_string(c + 1) +
                                       (column > 0 ? " (column " + std::to_string(column) + ")"
                                                   : std::string()) +
                                       ": expected a finite number, got " +
                                       (field.empty() ? std::string("an empty field")
                                                      : Quote(field))};
      }
      if (c == label_column_) {
        label = x;
      } else if (c == weight_column_) {
        if (x < 0.0f) {
          throw ParseFailure{number, "field " + std::to_string(c + 1) + ": weight " + Quote(field) +
                                         " is negative, expected a finite number >= 0"};
        }
        weight = x;
      } else {
        out_.values.push_back(x);
      }
    }
    out_.labels.push_back(label);
    if (weight_column_ != std::string_view::npos) out_.weights.push_back(weight);
  }

 private:
  std::size_t ResolveLabelColumn(std::uint64_t number) const {
    const int wanted = options_.csv_label_column;
    const auto fields = static_cast<long long>(fields_.size());
    const long long column = wanted < 0 ? fields + wanted : wanted;
    if (column < 0 || column >= fields) {
      throw ParseFailure{number, "label column " + std::to_string(wanted) + " is outside the " +
                                     std::to_string(fields) + " fields, expected -" +
                                     std::to_string(fields) + " .. " + std::to_string(fields - 1)};
    }
    return static_cast<std::size_t>(column);
  }

  const LoadOptions& options_;
  CsvPart& out_;
  std::vector<std::string_view> fields_;
  std::size_t label_column_ = 0;
  std::size_t weight_column_;
};

struct CsvStorage {
  MappedBuffer values, labels, weights;
};

// options.csv_weight_column as a column (npos for none): a name of the header, which must be
// the source's first line, or a number (negative from the end; checked against the rows'
// fields by the parser). Reads the first line through Peek, so the parse still sees it.
std::size_t ResolveWeightColumn(ByteSource& source, const LoadOptions& options) {
  const std::string& wanted = options.csv_weight_column;
  if (wanted.empty()) return std::string_view::npos;
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kBadInput, source.name() + ": weight column " + Quote(wanted) + " " + what);
  };
  std::vector<std::string_view> header;
  std::string_view first;
  if (options.first_line == 1) {
    constexpr std::size_t kLongestHeader = 1 << 20;
    first = source.Peek(kLongestHeader);
    first = first.substr(0, first.find('\n'));
    StripByteOrderMark(first);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    SplitFields(first, header);
    if (!IsHeaderLine(header.data(), header.size())) header.clear();
  }
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c] == wanted) return c;
  }
  long long number = 0;
  const auto [end, ec] = std::from_chars(wanted.data(), wanted.data() + wanted.size(), number);
  if (ec != std::errc() || end != wanted.data() + wanted.size()) {
    fail(header.empty() ? "is not a column number, and the file has no header line to name it"
                        : "is not in the header line " + Quote(first) + ", expected a column name or number");
  }
  if (number >= 0) return static_cast<std::size_t>(number);
  // From the end: resolved against the first line's fields.
  std::vector<std::string_view> fields;
  if (first.empty()) {
    first = source.Peek(1 << 20);
    first = first.substr(0, first.find('\n'));
  }
  SplitFields(first, fields);
  const auto count = static_cast<long long>(fields.size());
  if (-number > count) fail("is outside the " + std::to_string(count) + " fields");
  return static_cast<std::size_t>(count + number);
}

}  // namespace

Dataset ParseCsvSource(ByteSource& source, const LoadOptions& options, std::size_t& fields) {
  auto storage = std::make_shared<CsvStorage>();
  const std::size_t weight_column = ResolveWeightColumn(source, options);
  const bool weighted = weight_column != std::string_view::npos;
  ParseTextChunks<CsvPart>(
      source,
      {.threads = options.threads, .chunk_bytes = options.chunk_bytes, .first_line = options.first_line},
      [&](const TextChunk& chunk, CsvPart& part) {
        try {
          CsvChunkParser parser(options, weight_column, part);
          return ForEachLine(chunk, [&](std::string_view line, std::uint64_t number) {
            parser.Line(line, number, chunk.starts_file && number == 1);
          });
        } catch (ParseFailure& failure) {
          part.failure = std::move(failure);
        }
        return std::uint64_t{0};  // a failed chunk is the last one consumed
      },
      [&](CsvPart& part, const TextChunk&) {
        if (part.fields != 0) {
          if (fields == 0) {
            fields = part.fields;
          } else if (part.fields != fields) {
            throw ParseFailure{part.first_row_line,
                               "expected " + std::to_string(fields) + " fields, got " +
                                   std::to_string(part.fields)};
          }
        }
        if (part.failure) throw std::move(*part.failure);
        storage->values.Append<float>(part.values);
        storage->labels.Append<float>(part.labels);
        storage->weights.Append<float>(part.weights);
      });
  if (storage->labels.size() == 0) ThrowNoRows(source.name(), "CSV");
  const std::size_t features = fields - (weighted ? 2 : 1);
  Dataset d = Dataset::WrapDense(std::as_const(storage->values).As<float>(),
                                 std::as_const(storage->labels).As<float>(), features,
                                 storage, source.name());
  if (weighted) d = d.WithWeights(std::as_const(storage->weights).As<float>(), storage, source.name());
  if (options.num_features != 0) {
    if (options.num_features < features) {
      throw Error(ErrorCode::kBadInput,
                  source.name() + ": " + std::to_string(features) +
                      " feature columns, expected at most num_features " +
                      std::to_string(options.num_features));
    }
    d = std::move(d).WithNumFeatures(options.num_features);
  }
  return d;
}

}  // namespace corral::detail
