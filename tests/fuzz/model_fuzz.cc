// libFuzzer target: the model-file reader (LoadModel). A forged file must be refused with
// corral::Error, or load as a model whose description matches its parameter count and which
// evaluates on a small dataset of its dimension without error.
//
// The file's last 8 bytes are its FNV-1a checksum (<corral/model_file.h>); the target writes
// the right one there, as a forger would, so that mutations reach the header's fields instead
// of stopping at the checksum.
#include <cstring>
#include <string>

#include <corral/corral.h>

#include "file_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = corral::fuzz::ScratchPath("model");
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= 8) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < bytes.size() - 8; ++i) {
      hash ^= static_cast<unsigned char>(bytes[i]);
      hash *= 0x100000001b3ULL;
    }
    std::memcpy(bytes.data() + bytes.size() - 8, &hash, 8);
  }
  corral::fuzz::WriteFile(path, bytes);
  try {
    const corral::SavedModel model = corral::LoadModel(path);
    if (model.info.kind != corral::ModelKind::kMf && model.info.num_features > 0) {
      // One row touching the model's last feature.
      const auto last = static_cast<std::uint32_t>(model.info.num_features - 1);
      const corral::Dataset one({0, 1}, {last}, {1.0f}, {1.0f}, model.info.num_features, "one");
      corral::EvaluateModel(model, one);
    }
  } catch (const corral::Error&) {
  }
  return 0;
}
