// corral::RatingsInfo: how a ratings Dataset's dense user and item ids map back to the ids
// in the user's file.
//
// A ratings set is a sparse Dataset with exactly two entries per row: column `user` and column
// `num_users + item`, both with value 1, and the rating as the label. Dense ids are assigned in
// ascending order of the original ids (so MovieLens ids 1..943 become 0..942), independent of
// row order and of how the file was split into chunks for parallel parsing.
//
// A test set loaded with its train set's mapping (LoadOptions::ratings_mapping) keeps every
// known id's dense id; ids the train set never saw get dense ids from `known_users` (or
// `known_items`) upwards, again in ascending order of their original ids. A model trained on
// the train set treats user ids >= known_users and item ids >= known_items as unseen.
//
// Thread safety: immutable after construction; shared by every copy of its Dataset.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace corral {

struct RatingsInfo {
  std::size_t num_users = 0;    // dense user ids are 0 .. num_users - 1
  std::size_t num_items = 0;    // dense item ids are 0 .. num_items - 1
  std::size_t known_users = 0;  // ids below this came from the train set (== num_users there)
  std::size_t known_items = 0;
  std::vector<std::uint64_t> user_ids;  // dense user id -> the id in the file
  std::vector<std::uint64_t> item_ids;  // dense item id -> the id in the file

  // Dense id of an original id, if this mapping has it. Both ranges [0, known) and
  // [known, num) are sorted, so this is two binary searches.
  std::optional<std::uint32_t> DenseUser(std::uint64_t original) const {
    return Find(user_ids, known_users, original);
  }
  std::optional<std::uint32_t> DenseItem(std::uint64_t original) const {
    return Find(item_ids, known_items, original);
  }

 private:
  static std::optional<std::uint32_t> Find(const std::vector<std::uint64_t>& ids, std::size_t known,
                                           std::uint64_t original) {
    const auto split = ids.begin() + static_cast<std::ptrdiff_t>(std::min(known, ids.size()));
    for (auto [first, last] : {std::pair{ids.begin(), split}, std::pair{split, ids.end()}}) {
      const auto it = std::lower_bound(first, last, original);
      if (it != last && *it == original) {
        return static_cast<std::uint32_t>(it - ids.begin());
      }
    }
    return std::nullopt;
  }
};

}  // namespace corral
