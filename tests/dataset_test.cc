// corral::Dataset: CSR validation, row access, slicing and re-dimensioning.
#include <corral/dataset.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <corral/error.h>

namespace corral {
namespace {

// 3 rows over 5 features: {0:1, 3:2}, {}, {1:3, 2:4, 4:5}.
Dataset MakeSmall() {
  return Dataset({0, 2, 2, 5}, {0, 3, 1, 2, 4}, {1, 2, 3, 4, 5}, {1, -1, 1}, 5, "small");
}

std::vector<std::uint32_t> Indices(const SparseRow& row) {
  return {row.index.begin(), row.index.end()};
}
std::vector<float> Values(const SparseRow& row) { return {row.value.begin(), row.value.end()}; }

// Runs `make` and checks that it throws corral::Error with `code` and a message holding `piece`.
void ExpectError(const std::function<void()>& make, ErrorCode code, const std::string& piece) {
  try {
    make();
    ADD_FAILURE() << "expected corral::Error containing '" << piece << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)
        << "message '" << e.what() << "' lacks '" << piece << "'";
  }
}

TEST(DatasetTest, DefaultIsEmpty) {
  const Dataset d;
  EXPECT_EQ(d.rows(), 0u);
  EXPECT_EQ(d.nnz(), 0u);
  EXPECT_EQ(d.num_features(), 0u);
  EXPECT_EQ(d.max_row_nnz(), 0u);
  ASSERT_EQ(d.row_ptr().size(), 1u);
  EXPECT_EQ(d.Slice(0, 0).rows(), 0u);
}

TEST(DatasetTest, ExposesRowsLabelsAndShape) {
  const Dataset d = MakeSmall();
  EXPECT_EQ(d.rows(), 3u);
  EXPECT_EQ(d.nnz(), 5u);
  EXPECT_EQ(d.num_features(), 5u);
  EXPECT_EQ(d.max_row_nnz(), 3u);
  EXPECT_EQ(d.name(), "small");
  EXPECT_EQ(Indices(d.Row(0)), (std::vector<std::uint32_t>{0, 3}));
  EXPECT_EQ(Values(d.Row(0)), (std::vector<float>{1, 2}));
  EXPECT_EQ(d.Row(1).nnz(), 0u);
  EXPECT_EQ(Indices(d.Row(2)), (std::vector<std::uint32_t>{1, 2, 4}));
  EXPECT_EQ(Values(d.Row(2)), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(d.Label(0), 1.0f);
  EXPECT_EQ(d.Label(1), -1.0f);
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()),
            (std::vector<float>{1, -1, 1}));
}

TEST(DatasetTest, RejectsInconsistentCsr) {
  const auto bad = ErrorCode::kBadInput;
  ExpectError([] { Dataset({0, 1}, {0}, {1}, {1, 1}, 2, "shape"); }, bad, "shape: row_ptr has 2");
  ExpectError([] { Dataset({1, 1}, {0}, {1}, {1}, 2, "first"); }, bad, "first: row_ptr[0] is 1");
  ExpectError([] { Dataset({0, 3, 2}, {0, 1}, {1, 2}, {1, 1}, 2, "past"); }, bad,
              "past: row 0 ends at 3, beyond the 2 non-zeros");
  ExpectError([] { Dataset({0, 2, 1, 2}, {0, 1}, {1, 2}, {1, 1, 1}, 2, "dec"); }, bad,
              "dec: row_ptr decreases at row 1");
  ExpectError([] { Dataset({0, 1}, {0, 1}, {1, 2}, {1}, 2, "end"); }, bad,
              "end: row_ptr ends at 1");
  ExpectError([] { Dataset({0, 2}, {0, 1}, {1}, {1}, 2, "vals"); }, bad,
              "vals: index has 2 entries but value has 1");
  ExpectError([] { Dataset({0, 2}, {0, 2}, {1, 2}, {1}, 2, "wide"); }, bad,
              "wide: row 0 has feature index 2, expected < num_features 2");
  ExpectError([] { Dataset({0, 2}, {1, 1}, {1, 2}, {1}, 3, "dup"); }, bad,
              "dup: row 0 has feature index 1 after 1, expected strictly increasing");
  ExpectError([] { Dataset({0, 0, 2}, {2, 0}, {1, 2}, {1, 1}, 3, "order"); }, bad,
              "order: row 1 has feature index 0 after 2");
}

TEST(DatasetTest, SliceCopiesRowsWithRebasedOffsets) {
  const Dataset d = MakeSmall();
  const Dataset tail = d.Slice(1, 3);
  EXPECT_EQ(tail.rows(), 2u);
  EXPECT_EQ(tail.num_features(), 5u);
  EXPECT_EQ(tail.name(), "small");
  EXPECT_EQ(std::vector<std::uint64_t>(tail.row_ptr().begin(), tail.row_ptr().end()),
            (std::vector<std::uint64_t>{0, 0, 3}));
  EXPECT_EQ(Indices(tail.Row(1)), (std::vector<std::uint32_t>{1, 2, 4}));
  EXPECT_EQ(Values(tail.Row(1)), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(tail.Label(0), -1.0f);
  EXPECT_EQ(tail.max_row_nnz(), 3u);

  const Dataset head = d.Slice(0, 2);
  EXPECT_EQ(head.nnz(), 2u);
  EXPECT_EQ(head.max_row_nnz(), 2u);  // recomputed for the slice, not inherited
  EXPECT_NE(head.index().data(), d.index().data());  // a copy, not a view

  EXPECT_EQ(d.Slice(2, 2).rows(), 0u);
  EXPECT_EQ(d.Slice(2, 2).max_row_nnz(), 0u);
  EXPECT_EQ(d.Slice(0, 3).nnz(), d.nnz());
}

TEST(DatasetTest, SliceRejectsBadRange) {
  const Dataset d = MakeSmall();
  ExpectError([&] { d.Slice(2, 1); }, ErrorCode::kBadConfig, "small: cannot slice rows [2, 1)");
  ExpectError([&] { d.Slice(0, 4); }, ErrorCode::kBadConfig, "expected begin <= end <= 3");
}

TEST(DatasetTest, RowsViewsTheSameRowsAsSliceWithoutCopyingThem) {
  const Dataset d = MakeSmall();
  for (const auto& [begin, end] : {std::pair<std::size_t, std::size_t>{1, 3}, {0, 2}, {2, 2}, {0, 3}}) {
    const Dataset view = d.Rows(begin, end);
    const Dataset copy = d.Slice(begin, end);
    ASSERT_EQ(view.rows(), copy.rows());
    EXPECT_EQ(view.nnz(), copy.nnz());
    EXPECT_EQ(view.max_row_nnz(), copy.max_row_nnz());
    for (std::size_t r = 0; r < view.rows(); ++r) {
      EXPECT_EQ(Indices(view.Row(r)), Indices(copy.Row(r)));
      EXPECT_EQ(Values(view.Row(r)), Values(copy.Row(r)));
      EXPECT_EQ(view.Label(r), copy.Label(r));
    }
    // The values and labels are the original's memory.
    EXPECT_EQ(view.value().data(), d.value().data() + d.row_ptr()[begin]);
    EXPECT_EQ(view.labels().data(), d.labels().data() + begin);
  }
  const Dataset dense = Dataset::Dense({1, 2, 3, 4, 5, 6}, {1, -1, 1}, 2, "dense");
  const Dataset rows = dense.Rows(1, 3);
  ASSERT_TRUE(rows.is_dense());
  EXPECT_EQ(rows.DenseRow(1)[1], 6.0f);
  EXPECT_EQ(rows.value().data(), dense.value().data() + 2);
  ExpectError([&] { d.Rows(2, 4); }, ErrorCode::kBadConfig, "small: cannot view rows [2, 4)");
}

TEST(DatasetTest, WithNumFeaturesWidensOnly) {
  const Dataset d = MakeSmall();
  const Dataset wide = d.WithNumFeatures(9);
  EXPECT_EQ(wide.num_features(), 9u);
  EXPECT_EQ(d.num_features(), 5u);  // the const& overload leaves the source alone
  EXPECT_EQ(Indices(wide.Row(2)), Indices(d.Row(2)));
  EXPECT_EQ(wide.max_row_nnz(), 3u);
  EXPECT_EQ(d.WithNumFeatures(5).num_features(), 5u);

  Dataset moved = MakeSmall().WithNumFeatures(7);
  EXPECT_EQ(moved.num_features(), 7u);
  EXPECT_EQ(moved.nnz(), 5u);
  EXPECT_EQ(moved.name(), "small");

  ExpectError([&] { d.WithNumFeatures(4); }, ErrorCode::kBadInput,
              "small: cannot narrow the feature dimension from 5 to 4");
  ExpectError([] { MakeSmall().WithNumFeatures(0); }, ErrorCode::kBadInput, "from 5 to 0");
}

}  // namespace
}  // namespace corral
