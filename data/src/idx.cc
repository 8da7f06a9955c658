// IDX reader (LeCun's MNIST format, also Fashion-MNIST): uint8 images plus a uint8 labels file.
//
// Layout: magic 0x00 0x00 <type> <dims>, then <dims> big-endian uint32 sizes, then the data,
// row-major. Images are 0x08 (unsigned byte) with dims >= 2 (usually 3: count x 28 x 28);
// labels are 0x08 with dims 1. The pixels stream through a small buffer straight into the
// float array (x / 255), so the raw bytes are never held whole.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/load.h>

#include "data/src/byte_source.h"
#include "data/src/formats.h"
#include "data/src/mapped_buffer.h"

namespace corral::detail {
namespace {

[[noreturn]] void Bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kBadInput, path + ": " + what);
}

// Reads exactly n bytes or reports how many the file was short.
void ReadExactly(ByteSource& source, char* out, std::size_t n, std::uint64_t offset,
                 const std::string& promised) {
  std::size_t done = 0;
  while (done < n) {
    std::size_t got = 0;
    try {
      got = source.Read(out + done, n - done);
    } catch (const SourceError& e) {
      throw Error(e.code, source.name() + ": " + e.what + " at byte " +
                              std::to_string(offset + done) + ": " + e.detail);
    }
    if (got == 0) {
      Bad(source.name(), "truncated: ends at byte " + std::to_string(offset + done) + ", " +
                             promised);
    }
    done += got;
  }
}

struct IdxHeader {
  std::vector<std::uint32_t> sizes;
  std::uint64_t header_bytes = 0;
};

IdxHeader ReadHeader(ByteSource& source, int want_dims) {
  unsigned char magic[4];
  ReadExactly(source, reinterpret_cast<char*>(magic), 4, 0, "expected a 4-byte IDX magic");
  if (magic[0] != 0 || magic[1] != 0) {
    Bad(source.name(), "bad IDX magic " + std::to_string(magic[0]) + " " +
                           std::to_string(magic[1]) + ", expected 0 0 (is this an IDX file?)");
  }
  if (magic[2] != 0x08) {
    Bad(source.name(), "IDX element type 0x" + std::to_string(magic[2] / 16) +
                           std::to_string(magic[2] % 16) +
                           ", expected 0x08 (unsigned byte); other types are not supported");
  }
  const int dims = magic[3];
  if (want_dims == 1 ? dims != 1 : dims < 2) {
    Bad(source.name(), "IDX file has " + std::to_string(dims) + " dimensions, expected " +
                           (want_dims == 1 ? std::string("1 (a labels file)")
                                           : std::string("at least 2 (an images file; is this "
                                                         "the labels file?)")));
  }
  IdxHeader h;
  h.header_bytes = 4 + 4 * static_cast<std::uint64_t>(dims);
  for (int d = 0; d < dims; ++d) {
    unsigned char b[4];
    ReadExactly(source, reinterpret_cast<char*>(b), 4, 4 + 4 * static_cast<std::uint64_t>(d),
                "expected " + std::to_string(dims) + " dimension sizes in the header");
    h.sizes.push_back(std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 |
                      std::uint32_t{b[2]} << 8 | std::uint32_t{b[3]});
  }
  return h;
}

void ExpectEnd(ByteSource& source, std::uint64_t bytes) {
  char extra = 0;
  std::size_t got = 0;
  try {
    got = source.Read(&extra, 1);
  } catch (const SourceError& e) {
    throw Error(e.code, source.name() + ": " + e.what + " at byte " + std::to_string(bytes) +
                            ": " + e.detail);
  }
  if (got != 0) {
    Bad(source.name(), "wrong size: data continues past byte " + std::to_string(bytes) +
                           ", expected the file to end where its header's sizes say");
  }
}

bool Exists(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::is_regular_file(path, ignored);
}

// train-images-idx3-ubyte.gz -> train-labels-idx1-ubyte.gz (and without .gz, and the
// dotted spelling train-images.idx3-ubyte).
std::vector<std::string> LabelCandidates(const std::string& images) {
  const std::filesystem::path p(images);
  std::string file = p.filename().string();
  bool replaced = false;
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"images", "labels"},
                          {"idx3", "idx1"}}) {
    if (const std::size_t at = file.rfind(from); at != std::string::npos) {
      file.replace(at, from.size(), to);
      replaced = true;
    }
  }
  if (!replaced) return {};
  std::vector<std::string> out{(p.parent_path() / file).string()};
  const bool gz = file.size() > 3 && file.ends_with(".gz");
  out.push_back((p.parent_path() / (gz ? file.substr(0, file.size() - 3) : file + ".gz")).string());
  return out;
}

struct IdxStorage {
  MappedBuffer values, labels;
};

}  // namespace

Dataset ReadIdx(const std::string& path, const LoadOptions& options) {
  std::string labels_path = options.idx_labels;
  if (labels_path.empty()) {
    const std::vector<std::string> candidates = LabelCandidates(path);
    for (const std::string& c : candidates) {
      if (Exists(c)) {
        labels_path = c;
        break;
      }
    }
    if (labels_path.empty()) {
      std::string tried;
      for (const std::string& c : candidates) tried += (tried.empty() ? "" : " or ") + c;
      Bad(path, "no labels file found" +
                    (tried.empty() ? std::string(" (the name has no 'images' to replace)")
                                   : " (tried " + tried + ")") +
                    ", expected the matching idx1 labels file beside the images");
    }
  }

  const auto images = OpenFileSource(path);
  const IdxHeader h = ReadHeader(*images, 3);
  const std::uint64_t rows = h.sizes[0];
  std::uint64_t features = 1;
  for (std::size_t d = 1; d < h.sizes.size(); ++d) {
    features *= h.sizes[d];
    if (features > std::numeric_limits<std::uint32_t>::max()) {
      Bad(path, "IDX image size overflows, expected at most 2^32 values per image");
    }
  }
  std::string shape = std::to_string(rows);
  for (std::size_t d = 1; d < h.sizes.size(); ++d) {
    shape.push_back('x');  // not "x" + ...: a false -Wrestrict in GCC 12 at -O3
    shape.append(std::to_string(h.sizes[d]));
  }
  // Before anything is read or allocated: with a 0 dimension the header promises no pixels, and
  // only the labels file would be left to size from the header's row count.
  if (features == 0) {
    Bad(path, "IDX images of " + shape + " have 0 pixels each, expected every dimension >= 1");
  }
  const std::uint64_t pixels = rows * features;
  if (features != 0 && pixels / features != rows) Bad(path, "IDX size overflows");
  if (rows == 0) ThrowNoRows(path, "IDX image");
  if (pixels > (std::uint64_t{1} << 56)) {
    Bad(path, "header promises " + shape + " images, expected a size that fits in memory");
  }
  const std::string promised =
      "expected " + std::to_string(h.header_bytes + pixels) + " bytes for " + shape + " images";
  // A plain file's size is known up front: a wrong one fails before anything is allocated.
  if (const std::uint64_t size = images->SizeHint(); size != 0 && size != h.header_bytes + pixels) {
    Bad(path, (size < h.header_bytes + pixels ? "truncated: " : "wrong size: ") +
                  std::to_string(size) + " bytes, " + promised);
  }

  auto storage = std::make_shared<IdxStorage>();
  constexpr std::size_t kBlock = 1 << 20;
  std::vector<unsigned char> block(kBlock);
  for (std::uint64_t done = 0; done < pixels;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, pixels - done));
    ReadExactly(*images, reinterpret_cast<char*>(block.data()), n, h.header_bytes + done,
                promised);
    // Grown as the data arrives, not sized from the header: a gzip file's header may promise
    // far more than the file holds.
    float* out = reinterpret_cast<float*>(storage->values.Extend(n * sizeof(float)));
    for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<float>(block[k]) / 255.0f;
    done += n;
  }
  ExpectEnd(*images, h.header_bytes + pixels);

  const auto labels = OpenFileSource(labels_path);
  const IdxHeader lh = ReadHeader(*labels, 1);
  if (lh.sizes[0] != rows) {
    Bad(labels_path, "holds " + std::to_string(lh.sizes[0]) + " labels, expected " +
                         std::to_string(rows) + " (one per image in " + path + ")");
  }
  std::vector<unsigned char> raw(rows);
  ReadExactly(*labels, reinterpret_cast<char*>(raw.data()), rows, lh.header_bytes,
              "expected " + std::to_string(lh.header_bytes + rows) + " bytes for " +
                  std::to_string(rows) + " labels");
  ExpectEnd(*labels, lh.header_bytes + rows);
  storage->labels.Resize(rows * sizeof(float));
  float* label = reinterpret_cast<float*>(storage->labels.data());
  for (std::uint64_t r = 0; r < rows; ++r) label[r] = static_cast<float>(raw[r]);

  Dataset d = Dataset::WrapDense(std::as_const(storage->values).As<float>(),
                                 std::as_const(storage->labels).As<float>(),
                                 static_cast<std::size_t>(features), storage, path);
  if (options.num_features != 0) {
    if (options.num_features < features) {
      Bad(path, std::to_string(features) + " pixels per image, expected at most num_features " +
                    std::to_string(options.num_features));
    }
    d = std::move(d).WithNumFeatures(options.num_features);
  }
  return d;
}

}  // namespace corral::detail
