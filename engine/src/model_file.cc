#include <corral/model_file.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include <corral/error.h>

#include "engine/src/runtime/evaluate.h"
#include "engine/src/runtime/model_registry.h"

namespace corral {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'R', 'R', 'A', 'L', 'M', '\n'};

std::uint64_t Fnv1a(std::span<const char> bytes, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

template <typename T>
void Append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

nlohmann::json ToJson(const ModelInfo& m) {
  return {{"kind", ToString(m.kind)}, {"l2", m.l2},         {"num_features", m.num_features},
          {"classes", m.classes},     {"hidden", m.hidden}, {"rank", m.rank},
          {"users", m.users},         {"items", m.items},   {"mean", m.mean},
          {"user_ids", m.user_ids},   {"item_ids", m.item_ids}};
}

ModelInfo FromJson(const nlohmann::json& j) {
  ModelInfo m;
  m.kind = ParseModel(j.at("kind").get<std::string>());
  m.l2 = j.at("l2").get<float>();
  m.num_features = j.at("num_features").get<std::size_t>();
  m.classes = j.at("classes").get<std::vector<float>>();
  m.hidden = j.at("hidden").get<std::vector<int>>();
  m.rank = j.at("rank").get<int>();
  m.users = j.at("users").get<std::size_t>();
  m.items = j.at("items").get<std::size_t>();
  m.mean = j.at("mean").get<float>();
  m.user_ids = j.at("user_ids").get<std::vector<std::uint64_t>>();
  m.item_ids = j.at("item_ids").get<std::vector<std::uint64_t>>();
  return m;
}

nlohmann::json ToJson(const TrainingState& t) {
  return {{"algorithm", ToString(t.algorithm)}, {"threads", t.threads}, {"seed", t.seed},
          {"lr", t.lr}, {"lr_decay", t.lr_decay}, {"batch", t.batch},
          {"epochs_done", t.epochs_done}, {"position", t.position}, {"train_s", t.train_s},
          {"samples", t.samples}};
}

TrainingState TrainingFromJson(const nlohmann::json& j) {
  TrainingState t;
  t.algorithm = ParseAlgorithm(j.at("algorithm").get<std::string>());
  t.threads = j.at("threads").get<int>();
  t.seed = j.at("seed").get<std::uint64_t>();
  t.lr = j.at("lr").get<float>();
  t.lr_decay = j.at("lr_decay").get<float>();
  t.batch = j.at("batch").get<int>();
  t.epochs_done = j.at("epochs_done").get<int>();
  t.position = j.at("position").get<std::vector<std::uint64_t>>();
  t.train_s = j.at("train_s").get<double>();
  t.samples = j.at("samples").get<std::uint64_t>();
  return t;
}

[[noreturn]] void Corrupt(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kBadInput, path + ": not a usable corral model file: " + what);
}

// Reads a T at `pos` if the bytes are there.
template <typename T>
T Read(const std::string& bytes, std::size_t& pos, const std::string& path, const char* what) {
  if (bytes.size() - pos < sizeof(T)) Corrupt(path, std::string("truncated before the ") + what);
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  pos += sizeof value;
  return value;
}

}  // namespace

void SaveModel(const std::string& path, const SavedModel& model) {
  nlohmann::json json = ToJson(model.info);
  if (model.training) json["training"] = ToJson(*model.training);
  const std::string header = json.dump();
  std::string bytes(kMagic, sizeof kMagic);
  Append(bytes, kModelFileVersion);
  Append(bytes, static_cast<std::uint32_t>(header.size()));
  bytes += header;
  Append(bytes, static_cast<std::uint64_t>(model.params.size()));
  bytes.append(reinterpret_cast<const char*>(model.params.data()), model.params.size() * sizeof(float));
  Append(bytes, Fnv1a(bytes));

  // Temp file + rename: readers see the old file or the new one, never half of one.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      const int saved = errno;
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kIo, "cannot write model file " + path + ": " + std::strerror(saved));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot write model file " + path + ": " + std::strerror(saved));
  }
}

SavedModel LoadModel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kIo, "cannot open model file " + path + ": " + std::strerror(errno));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    Corrupt(path, "wrong magic (expected a file written by corral train --save)");
  }
  std::size_t pos = sizeof kMagic;
  const auto version = Read<std::uint32_t>(bytes, pos, path, "version");
  if (version != kModelFileVersion) {
    Corrupt(path, "format version " + std::to_string(version) + ", this corral reads version " +
                      std::to_string(kModelFileVersion));
  }
  const auto header_size = Read<std::uint32_t>(bytes, pos, path, "header size");
  if (bytes.size() - pos < header_size) Corrupt(path, "truncated in the header");
  const std::string_view header(bytes.data() + pos, header_size);
  pos += header_size;
  const auto count = Read<std::uint64_t>(bytes, pos, path, "parameter count");
  if ((bytes.size() - pos) / sizeof(float) < count ||
      bytes.size() - pos != count * sizeof(float) + sizeof(std::uint64_t)) {
    Corrupt(path, "size does not match its parameter count " + std::to_string(count) +
                      " (truncated or trailing bytes)");
  }
  const std::size_t params_at = pos;
  pos += count * sizeof(float);
  const auto checksum = Read<std::uint64_t>(bytes, pos, path, "checksum");
  if (checksum != Fnv1a(std::span(bytes.data(), params_at + count * sizeof(float)))) {
    Corrupt(path, "checksum mismatch (the file is corrupted)");
  }
  SavedModel model;
  try {
    const nlohmann::json json = nlohmann::json::parse(header);
    model.info = FromJson(json);
    if (json.contains("training")) model.training = TrainingFromJson(json.at("training"));
  } catch (const nlohmann::json::exception& e) {
    Corrupt(path, std::string("bad header: ") + e.what());
  }
  model.params.resize(count);
  std::memcpy(model.params.data(), bytes.data() + params_at, count * sizeof(float));
  internal::WithSavedModel(model.info, [&](const auto& m) {
    if (m.NumParams() != count) {
      Corrupt(path, "header describes " + std::to_string(m.NumParams()) + " parameters, file has " +
                        std::to_string(count));
    }
  });
  return model;
}

std::shared_ptr<const RatingsInfo> RatingsMapping(const ModelInfo& info) {
  if (info.kind != ModelKind::kMf) return nullptr;
  auto mapping = std::make_shared<RatingsInfo>();
  mapping->num_users = mapping->known_users = info.users;
  mapping->num_items = mapping->known_items = info.items;
  mapping->user_ids = info.user_ids;
  mapping->item_ids = info.item_ids;
  return mapping;
}

Evaluation EvaluateModel(const SavedModel& model, const Dataset& data) {
  return internal::WithSavedModel(model.info, [&](const auto& m) {
    using M = std::decay_t<decltype(m)>;
    if (m.NumParams() != model.params.size()) {
      throw Error(ErrorCode::kBadInput, "model has " + std::to_string(model.params.size()) +
                                            " parameters, its description needs " +
                                            std::to_string(m.NumParams()));
    }
    const internal::EvalResult r = internal::Evaluate(m, std::span<const float>(model.params), data);
    Evaluation e{.rows = data.rows(), .loss = r.loss, .objective = r.loss + m.Regularizer(model.params)};
    if constexpr (M::kTask == Task::kRegression) {
      e.rmse = r.rmse;
    } else {
      e.accuracy = r.accuracy;
    }
    return e;
  });
}

}  // namespace corral
