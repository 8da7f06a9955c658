// Loading datasets: one entry point for every format Corral reads.
//
//   corral::Dataset train = corral::LoadDataset("train.svm");
//   corral::Dataset test = corral::LoadDataset("test.svm", {.num_features = train.num_features()});
//
// Formats (DataFormat):
// - libsvm: LIBSVM/SVMlight text (see <corral/libsvm.h> for the accepted dialects).
// - idx: IDX uint8 images (idx3, e.g. Fashion-MNIST), gzip or plain, scaled to [0, 1], dense;
//   the labels file is found by name (train-images-idx3-ubyte[.gz] ->
//   train-labels-idx1-ubyte[.gz]) unless LoadOptions::idx_labels names it.
// - ratings: `user item rating [timestamp]` per line, fields separated by blanks, one comma or
//   "::" (MovieLens u.data, ratings.csv and ratings.dat); non-negative integer ids, remapped
//   densely (see <corral/ratings_info.h>); a first line none of whose fields is a number is
//   a header and skipped (one with a number is data, and an error if malformed); '#' starts a
//   comment.
// - csv: dense rows of numbers separated by commas, one column the label (csv_label_column),
//   optionally one the row's weight (csv_weight_column);
//   a first line with no numeric field is a header and skipped; every row has as many fields
//   as the first; blank lines are skipped; missing values are errors.
// - cache: Corral's binary cache (<corral/cache.h>), memory-mapped, checksummed.
// - auto: the cache and IDX magic numbers, then the extension (.csv -> csv; .data, .dat,
//   .tsv, .ratings -> ratings; .svm, .libsvm, .svmlight -> libsvm), then the first data line (`a b c [d]` with no ':' -> ratings),
//   else libsvm. Text formats may be gzip-compressed (detected by magic). A UTF-8 byte order
//   mark at the start of a ratings or CSV file is skipped.
//
// A file without any data row (empty, or only comments), or whose rows hold no feature (0
// columns besides the label), is an error: it is almost always a mistake. Sizes are checked
// before anything is allocated for them (<corral/limits.h>). Every error is a corral::Error naming the file, the line (and column where it
// helps) and what was expected: kBadInput for malformed data, kIo when it cannot be read.
//
// Text is parsed in parallel (oneTBB), in chunks cut at line boundaries; the result and every
// error message are the same for any thread count and chunk size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <corral/dataset.h>
#include <corral/ratings_info.h>

namespace corral {

enum class DataFormat { kAuto, kLibsvm, kIdx, kRatings, kCsv, kCache };

// "auto", "libsvm", "idx", "ratings", "csv", "cache"; throws kBadConfig for anything else.
DataFormat ParseDataFormat(std::string_view name);
std::string_view DataFormatName(DataFormat format);

struct LoadOptions {
  DataFormat format = DataFormat::kAuto;
  // Feature dimension; 0 means the file's own (largest index seen for LIBSVM). LIBSVM: an
  // index beyond it is an error. Dense formats and caches: a file with more features is an
  // error, one with fewer is widened (zero columns). Ratings: must be 0.
  std::size_t num_features = 0;
  // LIBSVM indices start at 0 instead of 1.
  bool zero_based = false;
  // Parsing threads; 0 = all hardware threads.
  int threads = 0;
  // Bytes of text per parallel task; 0 = chosen from the file size and thread count. Tests set
  // it tiny to check that chunking never changes a result.
  std::size_t chunk_bytes = 0;
  // Ratings test sets: the train set's mapping (train.ratings_shared()), so known ids keep
  // their dense ids and unseen ids come after them.
  std::shared_ptr<const RatingsInfo> ratings_mapping;
  // CSV: the label's column, 0-based; -1 = the last column.
  int csv_label_column = 0;
  // CSV: the column of each row's weight (Dataset::Weight, finite and >= 0), not a feature: a
  // name from the header line, or a 0-based number (-1 = the last column); empty for none.
  std::string csv_weight_column;
  // IDX: the labels file; empty = derived from the images file's name.
  std::string idx_labels;
  // Text formats: the number of the text's first line in its file. Above 1 when the text
  // continues a file read in pieces (ForEachPiece): error messages then name the file's line,
  // and no header or byte order mark is looked for.
  std::uint64_t first_line = 1;
};

// Reads `path` in `options.format` (or the detected one).
Dataset LoadDataset(const std::string& path, const LoadOptions& options = {});

// Reads `path` in consecutive pieces of whole rows and calls `fn(piece, first_row)` for each,
// in file order (`first_row`: the piece's first row in the file, from 0), so that an input
// larger than memory is held about `piece_bytes` of text (and its parsed rows) at a time. Each
// piece of text is parsed as LoadDataset parses a file (in parallel, with `options`; errors
// name the file's own line); a cache is memory-mapped and handed out in row ranges; an IDX
// file is read whole. Every CSV piece's rows have as many fields as the file's first row (as
// in LoadDataset). Per piece, as for a file of its own: a ratings piece without options.ratings_mapping maps its ids on its own
// (give the mapping to predict with a trained model's ids). Throws as LoadDataset does (and
// kBadConfig for piece_bytes 0); the pieces before a bad line have already been handed out.
void ForEachPiece(const std::string& path, const LoadOptions& options, std::size_t piece_bytes,
                  const std::function<void(const Dataset& piece, std::size_t first_row)>& fn);

// Parses text already in memory (libsvm, ratings or csv; auto picks by content); `name`
// stands for the path in error messages.
Dataset ParseDataset(std::string_view text, const std::string& name,
                     const LoadOptions& options = {});

// A ratings set from the caller's parallel arrays of (user id, item id, rating), ids mapped
// as the ratings reader maps them (<corral/ratings_info.h>); with `train`'s mapping when it is
// not null (a test set). The arrays are copied into the ratings layout. Throws corral::Error
// (kBadInput, naming `name`) for arrays of different lengths, none at all, or a rating that is
// not finite.
Dataset RatingsFromArrays(std::span<const std::uint64_t> users,
                          std::span<const std::uint64_t> items, std::span<const float> ratings,
                          const RatingsInfo* train, const std::string& name);

// Per-row sample weights for a training set of `rows` rows (--weights): `path` holds one
// weight per line, in the set's row order, each a finite number >= 0. Blank lines and lines
// starting with '#' are skipped, and a first line that is not a number is a column name.
// Returns rows [first, first + count) of them (a rank's part; count is capped at the set's
// end), never sized from the file. Throws corral::Error naming the file and line: kBadInput
// for a bad or negative weight, for more or fewer weights than rows, or when every weight is
// 0; kIo when it cannot be read.
std::vector<float> LoadWeights(const std::string& path, std::size_t rows, std::size_t first = 0,
                               std::size_t count = static_cast<std::size_t>(-1));

// The format LoadDataset would use for `path` under kAuto. Throws kIo when unreadable.
DataFormat DetectFormat(const std::string& path);

}  // namespace corral
