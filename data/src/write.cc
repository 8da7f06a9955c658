// Text writers with exact float round trips, through a DurableFile.
#include <corral/write.h>


#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <corral/cache.h>
#include <corral/error.h>

#include "data/src/durable_file.h"

namespace corral {
namespace {

// Buffers text and writes it through a DurableFile, committed by Commit().
class TextFile {
 public:
  explicit TextFile(const std::string& path) : file_(path, "file") {
    buffer_.reserve(kFlushAt + 4096);
  }

  void Put(std::string_view s) {
    buffer_.append(s);
    if (buffer_.size() >= kFlushAt) Flush();
  }
  void Put(char c) {
    buffer_.push_back(c);
    if (buffer_.size() >= kFlushAt) Flush();
  }
  void Put(float x) {
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, x);
    buffer_.append(text, end);
  }
  void Put(std::uint64_t x) {
    char text[24];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, x);
    buffer_.append(text, end);
  }

  void Commit() {
    Flush();
    file_.Commit();
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;

  void Flush() {
    file_.Write(buffer_);
    buffer_.clear();
  }

  detail::DurableFile file_;
  std::string buffer_;
};

}  // namespace

void WriteLibsvm(const Dataset& data, const std::string& path) {
  TextFile out(path);
  for (std::size_t r = 0; r < data.rows(); ++r) {
    out.Put(data.Label(r));
    const SparseRow row = data.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) {
      out.Put(' ');
      out.Put(std::uint64_t{row.index[k]} + 1);
      out.Put(':');
      out.Put(row.value[k]);
    }
    out.Put('\n');
  }
  out.Commit();
}

void WriteRatings(const Dataset& data, const std::string& path) {
  const RatingsInfo* m = data.ratings();
  if (m == nullptr) {
    throw Error(ErrorCode::kBadConfig,
                data.name() + ": not a ratings set, expected one loaded or generated as ratings");
  }
  TextFile out(path);
  for (std::size_t r = 0; r < data.rows(); ++r) {
    const SparseRow row = data.Row(r);
    out.Put(m->user_ids[row.index[0]]);
    out.Put('\t');
    out.Put(m->item_ids[row.index[1] - m->num_users]);
    out.Put('\t');
    out.Put(data.Label(r));
    out.Put('\n');
  }
  out.Commit();
}

void WriteCsv(const Dataset& data, const std::string& path, bool header) {
  TextFile out(path);
  const std::size_t features = data.num_features();
  if (header) {
    out.Put("label");
    for (std::size_t f = 0; f < features; ++f) {
      out.Put(",x");
      out.Put(std::uint64_t{f} + 1);
    }
    out.Put('\n');
  }
  std::vector<float> dense(features);
  for (std::size_t r = 0; r < data.rows(); ++r) {
    std::fill(dense.begin(), dense.end(), 0.0f);
    const SparseRow row = data.Row(r);
    for (std::size_t k = 0; k < row.nnz(); ++k) dense[row.index[k]] = row.value[k];
    out.Put(data.Label(r));
    for (float x : dense) {
      out.Put(',');
      out.Put(x);
    }
    out.Put('\n');
  }
  out.Commit();
}

void WriteDataset(const Dataset& data, const std::string& path) {
  if (path.ends_with(".cache")) {
    WriteCache(data, path);
  } else if (data.ratings() != nullptr) {
    WriteRatings(data, path);
  } else if (path.ends_with(".csv")) {
    WriteCsv(data, path);
  } else {
    WriteLibsvm(data, path);
  }
}

}  // namespace corral
