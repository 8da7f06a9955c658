// A mode's training state (ModeState, model_file.h), listed once. A mode that keeps more than
// its model (replicas, neighbour and public copies, estimates, residuals, counters, random
// streams) describes it in one function
//   void VisitState(StateVisitor& v) {
//     for (int w = 0; w < n; ++w) { v.Floats(Key("x", w), x[w]); v.Count(Key("round", w), round[w]); }
//   }
// and the same list saves the state into a checkpoint (StateVisitor::Saving) and restores it
// from one (Loading): a field cannot be saved and forgotten on load, or the reverse. Loading
// checks every name and length and, at Finish, that nothing in the file was left unread, and
// throws kBadInput naming the file and the entry.
//
// Thread safety: coordinator-only, while the workers are parked.
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <corral/error.h>
#include <corral/model_file.h>
#include <corral/rng.h>

namespace corral::internal {

// A checkpoint whose training state does not fit this run: kBadInput naming the file and `what`.
[[noreturn]] inline void BadModeState(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kBadInput, path + ": the checkpoint's training state does not fit this run: " +
                                        what + " (a damaged file, or one from another version)");
}

// What a loading run says of a checkpoint entry it has no place for (`kind`: array, counter).
inline std::string NotKept(const char* kind, const std::string& name) {
  return std::string("it holds the ") + kind + " '" + name + "', which this run does not keep";
}

class StateVisitor {
 public:
  static StateVisitor Saving(ModeState& out) { return StateVisitor(&out, nullptr, ""); }
  // `path`: the checkpoint's name, for messages.
  static StateVisitor Loading(const ModeState& in, std::string path) {
    return StateVisitor(nullptr, &in, std::move(path));
  }
  bool loading() const { return in_ != nullptr; }

  void Floats(const std::string& name, std::span<float> values) {
    if (!loading()) {
      out_->arrays[name].assign(values.begin(), values.end());
      return;
    }
    const auto it = in_->arrays.find(name);
    if (it == in_->arrays.end()) Missing(name);
    if (it->second.size() != values.size()) {
      Bad("its array '" + name + "' holds " + std::to_string(it->second.size()) +
          " floats, this run keeps " + std::to_string(values.size()));
    }
    if (!values.empty()) std::memcpy(values.data(), it->second.data(), values.size() * sizeof(float));
    seen_.insert(name);
  }
  void Floats(const std::string& name, std::vector<float>& values) {
    Floats(name, std::span<float>(values));
  }
  template <std::unsigned_integral T>
  void Count(const std::string& name, T& value) {
    std::uint64_t v = value;
    Word(name, v);
    if (loading() && v > std::numeric_limits<T>::max()) {
      Bad("its counter '" + name + "' is " + std::to_string(v) + ", out of range");
    }
    value = static_cast<T>(v);
  }
  void Flag(const std::string& name, bool& value) {
    std::uint64_t v = value ? 1 : 0;
    Word(name, v);
    value = v != 0;
  }
  // A double or float, bit for bit.
  void Real(const std::string& name, double& value) {
    auto bits = std::bit_cast<std::uint64_t>(value);
    Word(name, bits);
    value = std::bit_cast<double>(bits);
  }
  void Real(const std::string& name, float& value) {
    double v = value;
    Real(name, v);
    value = static_cast<float>(v);
  }
  // A random stream's position.
  void Random(const std::string& name, Rng& rng) {
    const std::span<std::uint64_t, 4> state = rng.State();
    for (std::size_t k = 0; k < state.size(); ++k) Word(name + "." + std::to_string(k), state[k]);
  }

  // Loading: whether the checkpoint holds the counter `name` (to name what a file from another
  // setting lacks before Count would call it damaged). Saving: false.
  bool HasCounter(const std::string& name) const { return loading() && in_->counters.contains(name); }

  // Loading: refuses the checkpoint (kBadInput, naming the file) when a value the mode read
  // is not one it can hold, `what` saying which and why.
  void Require(bool ok, const std::string& what) const {
    if (loading() && !ok) Bad(what);
  }

  // Loading: refuses the checkpoint as one written by another layout of the run (kBadConfig,
  // naming the file, as CheckResumable does), `what` saying what it was written with and what
  // this run has.
  void RequireLayout(bool ok, const std::string& what) const {
    if (loading() && !ok) {
      throw Error(ErrorCode::kBadConfig,
                  path_ + ": cannot resume: the checkpoint was written with " + what);
    }
  }

  // After the mode's VisitState: a checkpoint with entries this run did not ask for was
  // written by another layout (another mode, topology or worker count got past the checks).
  void Finish() const {
    if (!loading()) return;
    for (const auto& [name, values] : in_->arrays) {
      if (!seen_.contains(name)) Bad(NotKept("array", name));
    }
    for (const auto& [name, value] : in_->counters) {
      if (!seen_.contains(name)) Bad(NotKept("counter", name));
    }
  }

 private:
  StateVisitor(ModeState* out, const ModeState* in, std::string path)
      : out_(out), in_(in), path_(std::move(path)) {}

  void Word(const std::string& name, std::uint64_t& value) {
    if (!loading()) {
      out_->counters[name] = value;
      return;
    }
    const auto it = in_->counters.find(name);
    if (it == in_->counters.end()) Missing(name);
    value = it->second;
    seen_.insert(name);
  }
  [[noreturn]] void Missing(const std::string& name) const {
    Bad("it lacks '" + name + "', which this run keeps");
  }
  [[noreturn]] void Bad(const std::string& what) const { BadModeState(path_, what); }

  ModeState* out_;
  const ModeState* in_;
  std::string path_;
  std::set<std::string> seen_;
};

// "name/w": worker w's entry of `name`.
inline std::string Key(const char* name, std::size_t w) { return std::string(name) + "/" + std::to_string(w); }
inline std::string Key(const char* name, int w) { return Key(name, static_cast<std::size_t>(w)); }

// Across ranks. A rank's mode visits its own workers by their index on the rank (0..T-1, Key);
// a checkpoint names every worker by its id in the whole run (first + w), so that the file is
// the one a process running all the workers writes. An entry whose name has a number right
// after its first '/' ("x/3", "hat/3/1", "rng/3.2") is that worker's; any other is shared by
// all (every rank keeps the same value).
struct WorkerEntry {
  std::string head;  // up to and with the first '/'
  std::size_t worker = 0;
  std::string tail;  // what follows the number
};
inline std::optional<WorkerEntry> WorkerOf(const std::string& name) {
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos) return std::nullopt;
  std::size_t end = slash + 1;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == slash + 1 || end - slash > 10) return std::nullopt;
  return WorkerEntry{.head = name.substr(0, slash + 1),
                     .worker = std::stoull(name.substr(slash + 1, end - slash - 1)),
                     .tail = name.substr(end)};
}

// `state`'s entries of workers [first, first + count), renumbered from `to` (the other
// workers' entries dropped), and its shared entries.
inline ModeState WorkersOf(const ModeState& state, std::size_t first, std::size_t count,
                           std::size_t to) {
  ModeState out;
  const auto rename = [&](const std::string& name) -> std::optional<std::string> {
    const std::optional<WorkerEntry> e = WorkerOf(name);
    if (!e) return name;
    if (e->worker < first || e->worker - first >= count) return std::nullopt;
    return e->head + std::to_string(e->worker - first + to) + e->tail;
  };
  for (const auto& [name, values] : state.arrays) {
    if (const auto to_name = rename(name)) out.arrays[*to_name] = values;
  }
  for (const auto& [name, value] : state.counters) {
    if (const auto to_name = rename(name)) out.counters[*to_name] = value;
  }
  return out;
}

// Across ranks each rank loads only its workers' entries (WorkersOf), so no rank's Finish sees
// an entry of a worker beyond the run's `workers`: refused here, on every rank alike, as Finish
// refuses it in one process.
inline void CheckWorkersWithin(const ModeState& state, std::size_t workers, const std::string& path) {
  const auto check = [&](const std::string& name, const char* kind) {
    if (const std::optional<WorkerEntry> e = WorkerOf(name); e && e->worker >= workers) {
      BadModeState(path, NotKept(kind, name));
    }
  };
  for (const auto& entry : state.arrays) check(entry.first, "array");
  for (const auto& entry : state.counters) check(entry.first, "counter");
}

}  // namespace corral::internal
