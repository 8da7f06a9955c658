// libFuzzer target: the IDX reader, plain and gzip. Input: one knob byte (bit 0: gzip both
// files), a byte giving the images file's share of the rest (in 1/255ths), then the images
// file followed by the labels file.
#include <zlib.h>

#include <algorithm>
#include <string>
#include <string_view>

#include <corral/dataset.h>
#include <corral/error.h>
#include <corral/load.h>

#include "file_fuzz.h"

namespace {

std::string Gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const std::string images = corral::fuzz::ScratchPath("images-idx3-ubyte");
  static const std::string labels = corral::fuzz::ScratchPath("labels-idx1-ubyte");
  const bool gzip = (data[0] & 1) != 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  const std::size_t split = std::min(rest.size(), rest.size() * data[1] / 255);
  const std::string_view image_bytes = rest.substr(0, split);
  const std::string_view label_bytes = rest.substr(split);
  corral::fuzz::WriteFile(images, gzip ? Gzip(image_bytes) : std::string(image_bytes));
  corral::fuzz::WriteFile(labels, gzip ? Gzip(label_bytes) : std::string(label_bytes));
  try {
    const corral::Dataset d = corral::LoadDataset(
        images, {.format = corral::DataFormat::kIdx, .threads = 1, .idx_labels = labels});
    if (d.num_features() == 0 || d.rows() == 0) std::abort();  // refused, never returned
  } catch (const corral::Error&) {
  }
  return 0;
}
