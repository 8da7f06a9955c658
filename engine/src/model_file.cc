#include <corral/model_file.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <corral/error.h>
#include <corral/limits.h>

#include "data/src/durable_file.h"
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

[[noreturn]] void Corrupt(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kBadInput, path + ": not a usable corral model file: " + what);
}

// The header's fields one by one, each for its type and range, before any of them sizes an
// allocation: the checksum proves only that the writer meant these bytes.
class HeaderReader {
 public:
  HeaderReader(const nlohmann::json& j, const std::string& path) : j_(j), path_(path) {}

  std::uint64_t Unsigned(const char* key, std::uint64_t max) const {
    return Unsigned(At(key), key, max);
  }
  double Finite(const char* key) const { return Finite(At(key), key); }
  std::string Name(const char* key) const {
    if (!At(key).is_string()) Corrupt(path_, Field(key) + "is not a name");
    return At(key).get<std::string>();
  }
  template <typename T>
  std::vector<T> List(const char* key, std::uint64_t max_value) const {
    const nlohmann::json& list = At(key);
    if (!list.is_array()) Corrupt(path_, Field(key) + "is not a list");
    std::vector<T> out;
    out.reserve(list.size());  // bounded by the header's own length
    for (const nlohmann::json& v : list) {
      if constexpr (std::is_floating_point_v<T>) {
        out.push_back(static_cast<T>(Finite(v, key)));
      } else {
        out.push_back(static_cast<T>(Unsigned(v, key, max_value)));
      }
    }
    return out;
  }
  const nlohmann::json& At(const char* key) const {
    if (!j_.is_object() || !j_.contains(key)) {
      Corrupt(path_, "header lacks the field '" + std::string(key) + "'");
    }
    return j_.at(key);
  }

 private:
  std::string Field(const char* key) const { return "header field '" + std::string(key) + "' "; }
  std::uint64_t Unsigned(const nlohmann::json& v, const char* key, std::uint64_t max) const {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
      Corrupt(path_, Field(key) + "is " + v.dump().substr(0, 40) +
                         ", expected an integer in 0 .. " + std::to_string(max));
    }
    return v.get<std::uint64_t>();
  }
  // Finite, and within float's range (every float field is read through here too).
  double Finite(const nlohmann::json& v, const char* key) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        std::fabs(v.get<double>()) > std::numeric_limits<float>::max()) {
      Corrupt(path_, Field(key) + "is " + v.dump().substr(0, 40) + ", expected a finite number");
    }
    return v.get<double>();
  }

  const nlohmann::json& j_;
  const std::string& path_;
};

constexpr auto kMaxInt = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
constexpr auto kMaxU64 = std::numeric_limits<std::uint64_t>::max();

ModelInfo FromJson(const nlohmann::json& j, const std::string& path) {
  const HeaderReader h(j, path);
  ModelInfo m;
  if (!h.At("kind").is_string()) Corrupt(path, "header field 'kind' is not a model name");
  try {
    m.kind = ParseModel(h.At("kind").get<std::string>());
  } catch (const Error& e) {
    Corrupt(path, e.what());
  }
  m.l2 = static_cast<float>(h.Finite("l2"));
  m.num_features = h.Unsigned("num_features", kMaxFeatures);
  m.classes = h.List<float>("classes", 0);
  m.hidden = h.List<int>("hidden", kMaxInt);
  m.rank = static_cast<int>(h.Unsigned("rank", kMaxInt));
  m.users = h.Unsigned("users", kMaxFeatures);
  m.items = h.Unsigned("items", kMaxFeatures);
  m.mean = static_cast<float>(h.Finite("mean"));
  m.user_ids = h.List<std::uint64_t>("user_ids", kMaxU64);
  m.item_ids = h.List<std::uint64_t>("item_ids", kMaxU64);
  if (m.user_ids.size() != m.users || m.item_ids.size() != m.items) {
    Corrupt(path, "header lists " + std::to_string(m.user_ids.size()) + " user ids and " +
                      std::to_string(m.item_ids.size()) + " item ids, expected users = " +
                      std::to_string(m.users) + " and items = " + std::to_string(m.items));
  }
  return m;
}

nlohmann::json ToJson(const TrainingState& t) {
  nlohmann::json j = {{"algorithm", ToString(t.algorithm)}, {"threads", t.threads}, {"seed", t.seed},
          {"lr", t.lr}, {"lr_decay", t.lr_decay}, {"batch", t.batch},
          {"epochs_done", t.epochs_done}, {"position", t.position}, {"train_s", t.train_s},
          {"samples", t.samples}, {"order", t.order}};
  if (t.topology) j["topology"] = *t.topology;
  if (t.compress) j["compress"] = *t.compress;
  if (t.optimizer) j["optimizer"] = ToString(*t.optimizer);
  if (!t.mode.empty()) {
    // The arrays' floats follow the parameters, in this list's order (the map's).
    nlohmann::json arrays = nlohmann::json::array();
    for (const auto& [name, values] : t.mode.arrays) arrays.push_back({name, values.size()});
    j["mode"] = {{"counters", t.mode.counters}, {"arrays", arrays}};
  }
  return j;
}

// The mode state's names and lengths from the header (the floats come later); each length
// bounded by the file's size, so that a lying header sizes no allocation.
std::vector<std::pair<std::string, std::uint64_t>> ModeArraysFromJson(const nlohmann::json& j,
                                                                      const std::string& path,
                                                                      std::uint64_t max_floats) {
  std::vector<std::pair<std::string, std::uint64_t>> arrays;
  if (!j.contains("mode")) return arrays;
  const nlohmann::json& list = HeaderReader(j.at("mode"), path).At("arrays");
  if (!list.is_array()) Corrupt(path, "header field 'arrays' of the mode state is not a list");
  for (const nlohmann::json& a : list) {
    if (!a.is_array() || a.size() != 2 || !a[0].is_string() || !a[1].is_number_unsigned() ||
        a[1].get<std::uint64_t>() > max_floats) {
      Corrupt(path, "mode state array entry " + a.dump().substr(0, 60) +
                        " is not [name, length] within the file's size");
    }
    arrays.emplace_back(a[0].get<std::string>(), a[1].get<std::uint64_t>());
  }
  return arrays;
}

ModeState ModeCountersFromJson(const nlohmann::json& j, const std::string& path) {
  ModeState mode;
  if (!j.contains("mode")) return mode;
  const nlohmann::json& counters = HeaderReader(j.at("mode"), path).At("counters");
  if (!counters.is_object()) Corrupt(path, "header field 'counters' of the mode state is not a map");
  for (const auto& [name, value] : counters.items()) {
    if (!value.is_number_unsigned()) {
      Corrupt(path, "mode state counter '" + name + "' is " + value.dump().substr(0, 40) +
                        ", expected an unsigned integer");
    }
    mode.counters[name] = value.get<std::uint64_t>();
  }
  return mode;
}

TrainingState TrainingFromJson(const nlohmann::json& j, const std::string& path) {
  const HeaderReader h(j, path);
  TrainingState t;
  t.algorithm = ParseAlgorithm(h.Name("algorithm"));
  // A run saves the mode that ran; auto chooses one and is never it.
  if (t.algorithm == Algorithm::kAuto) Corrupt(path, "training state has algorithm 'auto', expected the mode that ran");
  t.threads = static_cast<int>(h.Unsigned("threads", kMaxInt));
  t.seed = h.Unsigned("seed", kMaxU64);
  t.lr = static_cast<float>(h.Finite("lr"));
  t.lr_decay = static_cast<float>(h.Finite("lr_decay"));
  t.batch = static_cast<int>(h.Unsigned("batch", kMaxInt));
  // Older files lack these three: nullopt, and resuming them does not compare them.
  if (j.contains("topology")) t.topology = h.Name("topology");
  if (j.contains("compress")) t.compress = h.Name("compress");
  if (j.contains("optimizer")) {
    try {
      t.optimizer = ParseOptimizer(h.Name("optimizer"));
    } catch (const Error& e) {
      Corrupt(path, std::string("training state: ") + e.what());
    }
  }
  if (j.contains("order")) {
    t.order = h.Name("order");
    if (t.order != "shuffled" && t.order != "storage") {
      Corrupt(path, "training state has order '" + t.order + "', expected shuffled or storage");
    }
  }
  t.epochs_done = static_cast<int>(h.Unsigned("epochs_done", kMaxInt));
  t.position = h.List<std::uint64_t>("position", kMaxU64);
  t.train_s = h.Finite("train_s");
  t.samples = h.Unsigned("samples", kMaxU64);
  t.mode = ModeCountersFromJson(j, path);
  return t;
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
  if (model.training) {
    for (const auto& [name, values] : model.training->mode.arrays) {
      bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    }
  }
  Append(bytes, Fnv1a(bytes));

  // Readers see the old file or the new one, never half of one, even after a crash.
  detail::DurableFile out(path, "model file");
  out.Write(bytes);
  out.Commit();
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
  if (version != 1 && version != kModelFileVersion) {
    Corrupt(path, "format version " + std::to_string(version) + ", this corral reads versions 1 and " +
                      std::to_string(kModelFileVersion));
  }
  const auto header_size = Read<std::uint32_t>(bytes, pos, path, "header size");
  if (bytes.size() - pos < header_size) Corrupt(path, "truncated in the header");
  const std::string_view header(bytes.data() + pos, header_size);
  pos += header_size;
  const auto count = Read<std::uint64_t>(bytes, pos, path, "parameter count");
  // Version 1 ends with the checksum after the parameters; version 2 may put the mode state's
  // arrays between them (their lengths are checked against the header below).
  const std::size_t rest = bytes.size() - pos;
  if (rest / sizeof(float) < count || rest < count * sizeof(float) + sizeof(std::uint64_t) ||
      (version == 1 && rest != count * sizeof(float) + sizeof(std::uint64_t)) ||
      (rest - sizeof(std::uint64_t)) % sizeof(float) != 0) {
    Corrupt(path, "size does not match its parameter count " + std::to_string(count) +
                      " (truncated or trailing bytes)");
  }
  const std::size_t params_at = pos;
  const std::size_t checksum_at = bytes.size() - sizeof(std::uint64_t);
  pos = checksum_at;
  const auto checksum = Read<std::uint64_t>(bytes, pos, path, "checksum");
  if (checksum != Fnv1a(std::span(bytes.data(), checksum_at))) {
    Corrupt(path, "checksum mismatch (the file is corrupted)");
  }
  const std::uint64_t extra_floats = (checksum_at - params_at) / sizeof(float) - count;
  SavedModel model;
  std::vector<std::pair<std::string, std::uint64_t>> arrays;
  try {
    const nlohmann::json json = nlohmann::json::parse(header);
    model.info = FromJson(json, path);
    if (json.contains("training")) {
      model.training = TrainingFromJson(json.at("training"), path);
      arrays = ModeArraysFromJson(json.at("training"), path, extra_floats);
    }
  } catch (const nlohmann::json::exception& e) {
    Corrupt(path, std::string("bad header: ") + e.what());
  }
  std::uint64_t listed = 0;
  for (const auto& [name, length] : arrays) listed += length;  // each <= extra_floats: no overflow
  if (listed != extra_floats) {
    Corrupt(path, "header lists " + std::to_string(listed) + " floats of mode state, the file holds " +
                      std::to_string(extra_floats));
  }
  std::size_t at = params_at + count * sizeof(float);
  for (const auto& [name, length] : arrays) {
    if (model.training->mode.arrays.contains(name)) {
      Corrupt(path, "mode state array '" + name + "' is listed twice");
    }
    std::vector<float>& values = model.training->mode.arrays[name];
    values.resize(length);
    if (length > 0) std::memcpy(values.data(), bytes.data() + at, length * sizeof(float));  // not null
    at += length * sizeof(float);
  }
  // Every model has at least num_features (inputs) and users + items parameters: bounding them
  // by the count, itself bounded by the file's size, bounds what building the model allocates.
  const ModelInfo& info = model.info;
  if (info.num_features > count || info.users + info.items > count) {
    Corrupt(path, "header describes " + std::to_string(info.num_features) + " features, " +
                      std::to_string(info.users) + " users and " + std::to_string(info.items) +
                      " items, more than the file's " + std::to_string(count) + " parameters");
  }
  model.params.resize(count);
  std::memcpy(model.params.data(), bytes.data() + params_at, count * sizeof(float));
  try {
    internal::WithSavedModel(model.info, [&](const auto& m) {
      if (m.NumParams() != count) {
        Corrupt(path, "header describes " + std::to_string(m.NumParams()) +
                          " parameters, file has " + std::to_string(count));
      }
    });
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(path + ": ")) throw;
    Corrupt(path, e.what());
  }
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
  return internal::WithSavedParams(model, [&](const auto& m) {
    using M = std::decay_t<decltype(m)>;
    const internal::EvalResult r = internal::Evaluate(m, std::span<const float>(model.params), data);
    Evaluation e{.rows = data.rows(), .loss = r.loss, .objective = r.loss + m.Regularizer(model.params)};
    if constexpr (M::kTask == Task::kRegression) {
      e.rmse = r.rmse;
    } else {
      e.accuracy = r.accuracy;
    }
    e.auc = internal::EvaluateAuc(m, std::span<const float>(model.params), data);
    return e;
  });
}

}  // namespace corral
