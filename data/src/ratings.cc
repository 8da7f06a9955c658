// Ratings reader: `user item rating [timestamp]` lines to a two-entries-per-row sparse set.
//
// Memory: while parsing, the raw 64-bit user id of row r sits in row_ptr[r + 1] and the raw
// item id in the 8 bytes that later hold row r's two values; the remap pass overwrites both
// in place. So the peak is the final dataset (28 bytes per rating) plus the index array,
// instead of raw triplets and the final arrays side by side.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <corral/error.h>
#include <corral/limits.h>
#include <corral/load.h>
#include <corral/ratings_info.h>

#include "data/src/formats.h"
#include "data/src/mapped_buffer.h"
#include "data/src/text_pipeline.h"
#include "data/src/text_util.h"

namespace corral::detail {
namespace {

struct RatingsPart {
  std::vector<std::uint64_t> users, items;
  std::vector<float> ratings;
  std::vector<std::uint64_t> unique_users, unique_items;  // sorted, distinct

  void Clear() {
    users.clear();
    items.clear();
    ratings.clear();
    unique_users.clear();
    unique_items.clear();
  }
};

// The dataset's arrays, holding raw ids until Finish() remaps them.
struct RatingsStorage {
  MappedBuffer row_ptr, index, value, label;
};

void SortUnique(std::vector<std::uint64_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// Splits a ratings line into fields. Separators: a run of blanks, or one comma or "::" with
// optional blanks around it. Returns the number of fields (at most `max` are stored; more
// are counted).
class FieldSplitter {
 public:
  static constexpr std::size_t kMax = 4;

  FieldSplitter(std::string_view line, std::uint64_t line_number)
      : line_(line), line_number_(line_number) {}

  std::size_t Split(std::string_view (&fields)[kMax]) {
    std::size_t count = 0;
    std::size_t at = SkipBlanks(0);
    if (at == line_.size()) return 0;
    while (true) {
      std::size_t end = at;
      while (end < line_.size() && !IsBlank(line_[end]) && line_[end] != ',' && line_[end] != ':') {
        ++end;
      }
      if (end == at) {
        throw ParseFailure{line_number_, "column " + std::to_string(at + 1) +
                                             ": empty field, expected user item rating "
                                             "[timestamp]"};
      }
      if (count < kMax) fields[count] = line_.substr(at, end - at);
      ++count;
      at = SkipBlanks(end);
      if (at == line_.size()) return count;
      if (line_[at] == ',') {
        at = SkipBlanks(at + 1);
      } else if (line_[at] == ':') {
        if (at + 1 >= line_.size() || line_[at + 1] != ':') {
          throw ParseFailure{line_number_, "column " + std::to_string(at + 1) +
                                               ": lone ':', expected blanks, ',' or '::' "
                                               "between fields"};
        }
        at = SkipBlanks(at + 2);
      } else if (at == end) {
        // Unreachable: a field ends at a separator or the end of the line.
        return count;
      }
      if (at == line_.size()) {
        throw ParseFailure{line_number_, "column " + std::to_string(at) +
                                             ": separator at the end of the line, expected "
                                             "another field"};
      }
    }
  }

 private:
  std::size_t SkipBlanks(std::size_t at) const {
    while (at < line_.size() && IsBlank(line_[at])) ++at;
    return at;
  }

  std::string_view line_;
  std::uint64_t line_number_;
};

// `first_line`: this is line 1 of the file, which may be a header.
void ParseRatingsLine(std::string_view line, std::uint64_t number, bool first_line,
                      RatingsPart& out) {
  if (first_line) StripByteOrderMark(line);
  const std::string_view whole = line;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const auto fail = [&](std::string_view field, const std::string& what) {
    throw ParseFailure{number, "column " + std::to_string(ColumnOf(whole, field)) + ": " + what +
                                   ", got " + Quote(field)};
  };
  if (const std::size_t nul = FindNul(line); nul != std::string_view::npos) {
    throw ParseFailure{number, "column " + std::to_string(nul + 1) +
                                   ": NUL byte, expected ratings text (is this a binary file?)"};
  }
  const std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] == '#') return;  // blank or comment
  std::string_view fields[FieldSplitter::kMax];
  const std::size_t count = FieldSplitter(line, number).Split(fields);
  if (first_line && IsHeaderLine(fields, std::min(count, FieldSplitter::kMax))) return;
  if (count < 3 || count > 4) {
    throw ParseFailure{number, "expected 3 or 4 fields (user item rating [timestamp]), got " +
                                   std::to_string(count)};
  }
  std::uint64_t user = 0, item = 0;
  float rating = 0;
  if (!ParseUnsigned(fields[0], user)) fail(fields[0], "expected a non-negative integer user id");
  if (!ParseUnsigned(fields[1], item)) fail(fields[1], "expected a non-negative integer item id");
  if (!ParseFloat(fields[2], rating)) fail(fields[2], "expected a finite numeric rating");
  double timestamp = 0;
  if (count == 4) {
    const auto [ptr, ec] =
        std::from_chars(fields[3].data(), fields[3].data() + fields[3].size(), timestamp);
    if (ec != std::errc() || ptr != fields[3].data() + fields[3].size()) {
      fail(fields[3], "expected a numeric timestamp");
    }
  }
  out.users.push_back(user);
  out.items.push_back(item);
  out.ratings.push_back(rating);
}

// Builds the mapping from the distinct ids seen (and the train mapping, if any).
std::shared_ptr<RatingsInfo> MakeMapping(std::vector<std::uint64_t> users,
                                         std::vector<std::uint64_t> items,
                                         const RatingsInfo* train) {
  auto info = std::make_shared<RatingsInfo>();
  SortUnique(users);
  SortUnique(items);
  if (train != nullptr) {
    info->user_ids = train->user_ids;
    info->item_ids = train->item_ids;
    info->known_users = train->num_users;
    info->known_items = train->num_items;
    // Unseen ids, in ascending order, after the train set's.
    for (std::uint64_t u : users) {
      if (!train->DenseUser(u)) info->user_ids.push_back(u);
    }
    for (std::uint64_t i : items) {
      if (!train->DenseItem(i)) info->item_ids.push_back(i);
    }
  } else {
    info->user_ids = std::move(users);
    info->item_ids = std::move(items);
    info->known_users = info->user_ids.size();
    info->known_items = info->item_ids.size();
  }
  info->num_users = info->user_ids.size();
  info->num_items = info->item_ids.size();
  return info;
}

// Rewrites the raw ids held in `storage` (see the top of the file) into the final layout.
Dataset Finish(std::shared_ptr<RatingsStorage> storage, std::shared_ptr<RatingsInfo> info,
               const std::string& name, int threads) {
  const std::size_t rows = storage->label.size() / sizeof(float);
  const std::uint64_t columns = std::uint64_t{info->num_users} + info->num_items;
  if (columns > kMaxFeatures) {
    throw Error(ErrorCode::kBadInput,
                name + ": " + std::to_string(info->num_users) + " users and " +
                    std::to_string(info->num_items) +
                    " items, expected at most 2^32 together (columns are 32-bit)");
  }
  storage->index.Resize(rows * 2 * sizeof(std::uint32_t));
  char* row_ptr = storage->row_ptr.data();
  char* value = storage->value.data();
  char* index = storage->index.data();
  const RatingsInfo& m = *info;
  oneapi::tbb::task_arena arena(ResolveThreads(threads));
  arena.execute([&] {
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<std::size_t>(0, rows), [&](const auto& range) {
          for (std::size_t r = range.begin(); r != range.end(); ++r) {
            std::uint64_t user = 0, item = 0;
            std::memcpy(&user, row_ptr + (r + 1) * 8, 8);
            std::memcpy(&item, value + r * 8, 8);
            // Every id is in the mapping: it was built from these very rows.
            const std::uint32_t pair[2] = {
                *m.DenseUser(user), static_cast<std::uint32_t>(m.num_users + *m.DenseItem(item))};
            std::memcpy(index + r * 8, pair, 8);
            const float ones[2] = {1.0f, 1.0f};
            std::memcpy(value + r * 8, ones, 8);
            const std::uint64_t end = 2 * (r + 1);
            std::memcpy(row_ptr + (r + 1) * 8, &end, 8);
          }
        });
  });
  const CsrView view{.row_ptr = std::as_const(storage->row_ptr).As<std::uint64_t>(),
                     .index = std::as_const(storage->index).As<std::uint32_t>(),
                     .value = std::as_const(storage->value).As<float>(),
                     .label = std::as_const(storage->label).As<float>(),
                     .num_features = static_cast<std::size_t>(columns)};
  return Dataset::WrapSparse(view, std::move(storage), name).WithRatings(std::move(info));
}

}  // namespace

Dataset ParseRatingsSource(ByteSource& source, const LoadOptions& options) {
  if (options.num_features != 0) {
    throw Error(ErrorCode::kBadConfig,
                source.name() + ": num_features does not apply to ratings (the dimension is "
                                "num_users + num_items), expected 0");
  }
  auto storage = std::make_shared<RatingsStorage>();
  storage->row_ptr.Push<std::uint64_t>(0);
  std::unordered_set<std::uint64_t> users, items;
  const RatingsInfo* train = options.ratings_mapping.get();
  ParseTextChunks<RatingsPart>(
      source,
      {.threads = options.threads, .chunk_bytes = options.chunk_bytes, .first_line = options.first_line},
      [&](const TextChunk& chunk, RatingsPart& part) {
        const std::uint64_t lines =
            ForEachLine(chunk, [&](std::string_view line, std::uint64_t number) {
              ParseRatingsLine(line, number, chunk.starts_file && number == 1, part);
            });
        part.unique_users = part.users;
        part.unique_items = part.items;
        SortUnique(part.unique_users);
        SortUnique(part.unique_items);
        return lines;
      },
      [&](const RatingsPart& part, const TextChunk&) {
        storage->row_ptr.Append<std::uint64_t>(part.users);
        storage->value.Append<std::uint64_t>(part.items);
        storage->label.Append<float>(part.ratings);
        users.insert(part.unique_users.begin(), part.unique_users.end());
        items.insert(part.unique_items.begin(), part.unique_items.end());
      });
  if (storage->label.size() == 0) ThrowNoRows(source.name(), "ratings");
  auto info = MakeMapping({users.begin(), users.end()}, {items.begin(), items.end()}, train);
  return Finish(std::move(storage), std::move(info), source.name(), options.threads);
}

Dataset BuildRatings(std::span<const std::uint64_t> users, std::span<const std::uint64_t> items,
                     std::span<const float> ratings, const RatingsInfo* train,
                     const std::string& name) {
  auto storage = std::make_shared<RatingsStorage>();
  storage->row_ptr.Push<std::uint64_t>(0);
  storage->row_ptr.Append(users);
  storage->value.Append(items);
  storage->label.Append(ratings);
  auto info = MakeMapping({users.begin(), users.end()}, {items.begin(), items.end()}, train);
  return Finish(std::move(storage), std::move(info), name, 0);
}

Dataset RemapRatings(const Dataset& data, const RatingsInfo& train) {
  const RatingsInfo& own = *data.ratings();
  std::vector<std::uint64_t> users(data.rows()), items(data.rows());
  for (std::size_t r = 0; r < data.rows(); ++r) {
    const SparseRow row = data.Row(r);
    users[r] = own.user_ids[row.index[0]];
    items[r] = own.item_ids[row.index[1] - own.num_users];
  }
  return BuildRatings(users, items, data.labels(), &train, data.name());
}

}  // namespace corral::detail
