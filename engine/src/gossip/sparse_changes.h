// Sparse rounds for local SGD (modes/dpsgd.h): a round's message carries only the coordinates
// the worker changed since the last round, and the average is taken over the union of the
// workers' changes. Exact because local SGD ends every round with all replicas bitwise equal
// (the common average A): a coordinate that worker j did not change still holds A[u] in x_j,
// so every receiver knows it without being told.
//
// A worker keeps `base`, its copy of A, and the coordinates its steps wrote since the round
// (ChangedCoords, a two-level bitmap: O(1) per written coordinate, no sort). Its message
// (ChangeMessage) is
//   sparse: [k: uint32][k indices: uint32, increasing][k values: float], 4 + 8k bytes, over
//           C = {u : bits(x[u]) != bits(base[u])}, when k <= MaxSparseChanges(d) = d / 64;
//   dense:  the d floats of x (the slot's size, and what every worker sends in its first round,
//           before `base` exists).
// C is a function of (x, base) alone (the bitmap only narrows where to look; once a step set
// more coordinates than a sparse message can hold, the round scans all d), so a checkpoint
// holding x and base resumes bit for bit. Receivers tell the forms apart by size and validate
// a sparse message fully (ParseChanges) before using it.
//
// The mix (MixChanges) runs over U = the union of the C_j (all d when any message is dense):
//   x[u] = base[u] = sum_j W_ij v_j[u] in worker order, v_j[u] = j's value if u in C_j, else
//   base[u] (x[u] for the worker itself),
// the dense formula's operations, in its order, on the same values: every worker computes the
// same U and the same sums, so replicas stay bitwise equal. Coordinates outside U keep A[u].
// The dense formula applied to n equal values a gives a back exactly for n = 2 and n = 4
// (weights 1/2, 1/4: every product and partial sum is exact or rounds back to a, checked on
// 2e7 random floats; an underflow to subnormals aside), so there the sparse rounds give the
// dense rounds' bits; for other n the dense formula may move an unchanged coordinate by an ulp
// per round, which the sparse round does not: it keeps the exact common value.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <corral/error.h>

#include "engine/src/channel/transport.h"

namespace corral::internal {

// The most changed coordinates a sparse message carries: d / 64. Not the byte break-even
// (4 + 8k < 4d, k < d / 2): a sparse round visits each changed coordinate at random with a
// branch per neighbour, a dense one streams d floats vectorised. Measured on the Zipf set
// (d = 100,000, 2 workers, bench/replica_speed.py --only local, machine loaded): at k = 23,000
// changes the sparse round took 2.2 ms (encode 0.46, mix 1.7) against the dense round's 0.06 ms
// of mix and copy, about 60 ns per changed coordinate against 0.6 ns per coordinate; at
// k = 300 (every 16 steps) it took 15 us against 290. k <= d / 64 keeps the sparse round
// cheaper with room for the machine's noise; it also means models under 64 coordinates
// (a9a's 124: at most 1) send dense messages, whose rounds are cheaper there anyway.
// (4 + 8k < 4d then always holds.)
inline std::size_t MaxSparseChanges(std::size_t d) { return d / 64; }

// The coordinates a worker's steps wrote since its last round. Thread safety: owner-only.
class ChangedCoords {
 public:
  void Init(std::size_t d) {
    bits_.assign((d + 63) / 64, 0);
    words_.assign((bits_.size() + 63) / 64, 0);
    limit_ = MaxSparseChanges(d);
    count_ = 0;
    saturated_ = false;
  }
  // u was written (u < d). Once more than MaxSparseChanges coordinates were, marking stops:
  // the round then scans every coordinate.
  void Mark(std::uint32_t u) {
    if (saturated_) return;
    std::uint64_t& word = bits_[u >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (u & 63);
    if (word & bit) return;
    word |= bit;
    words_[u >> 12] |= std::uint64_t{1} << ((u >> 6) & 63);
    if (++count_ > limit_) saturated_ = true;
  }
  // Every coordinate may have been written (a dense step, a resumed run).
  void Saturate() { saturated_ = true; }
  bool saturated() const { return saturated_; }
  // Calls f(u) for every marked coordinate, in increasing order. \pre !saturated().
  template <typename F>
  void ForEach(F&& f) const {
    for (std::size_t s = 0; s < words_.size(); ++s) {
      for (std::uint64_t ws = words_[s]; ws != 0; ws &= ws - 1) {
        const std::size_t b = s * 64 + static_cast<std::size_t>(std::countr_zero(ws));
        for (std::uint64_t bs = bits_[b]; bs != 0; bs &= bs - 1) {
          f(static_cast<std::uint32_t>(b * 64 + static_cast<std::size_t>(std::countr_zero(bs))));
        }
      }
    }
  }
  // Forgets every mark: O(marked words), or O(d / 64) after saturation.
  void Clear() {
    if (saturated_) {
      std::fill(bits_.begin(), bits_.end(), 0);
    } else {
      for (std::size_t s = 0; s < words_.size(); ++s) {
        for (std::uint64_t ws = words_[s]; ws != 0; ws &= ws - 1) {
          bits_[s * 64 + static_cast<std::size_t>(std::countr_zero(ws))] = 0;
        }
      }
    }
    std::fill(words_.begin(), words_.end(), 0);
    count_ = 0;
    saturated_ = false;
  }

 private:
  std::vector<std::uint64_t> bits_;   // bit u: coordinate u was written
  std::vector<std::uint64_t> words_;  // bit b: bits_[b] is not zero
  std::size_t limit_ = 0;
  std::size_t count_ = 0;
  bool saturated_ = false;
};

// One worker's outgoing message buffer (sparse form), allocated once at its largest.
// Thread safety: owner-only.
class ChangeMessage {
 public:
  void Init(std::size_t d) { words_.assign(1 + 2 * MaxSparseChanges(d), 0); }
  // The round's message: sparse over C (see the header) when it fits, else x itself.
  std::span<const std::byte> Encode(std::span<const float> x, std::span<const float> base,
                                    const ChangedCoords& marked) {
    const std::size_t limit = MaxSparseChanges(x.size());
    if (limit == 0) return std::as_bytes(x);  // d < 64: always dense
    std::size_t k = 0;
    bool fits = true;
    const auto consider = [&](std::uint32_t u) {
      if (std::bit_cast<std::uint32_t>(x[u]) == std::bit_cast<std::uint32_t>(base[u])) return;
      if (k == limit) {
        fits = false;
        return;
      }
      words_[1 + k++] = u;
    };
    if (marked.saturated()) {
      for (std::uint32_t u = 0; u < x.size() && fits; ++u) consider(u);
    } else {
      marked.ForEach(consider);  // at most `limit` marks: always fits
    }
    if (!fits) return std::as_bytes(x);
    words_[0] = static_cast<std::uint32_t>(k);
    for (std::size_t j = 0; j < k; ++j) words_[1 + k + j] = std::bit_cast<std::uint32_t>(x[words_[1 + j]]);
    return std::as_bytes(std::span<const std::uint32_t>(words_.data(), 1 + 2 * k));
  }

 private:
  std::vector<std::uint32_t> words_;
};

// The k of a sparse message (its first word).
inline std::size_t SparseCount(std::span<const std::byte> message) {
  return *reinterpret_cast<const std::uint32_t*>(message.data());
}

// One term of a round's row, in worker order: W_ij and j's message (or the worker itself).
struct ChangeTerm {
  float weight = 0;
  bool self = false;                     // the mixing worker: its values are x
  const float* dense = nullptr;          // a dense message's d values, or null
  const std::uint32_t* index = nullptr;  // a sparse message's (or the worker's own) changes
  const float* value = nullptr;
  std::size_t count = 0;
  std::size_t at = 0;                    // cursor into index/value
};

// Points `term` at a sparse message's changes: [k][k indices][k values] from `words` on.
inline void SparseTerm(const std::uint32_t* words, ChangeTerm& term) {
  term.dense = nullptr;
  term.count = words[0];
  term.index = words + 1;
  term.value = reinterpret_cast<const float*>(words + 1 + term.count);
  term.at = 0;
}

// Reads message m (of d-coordinate replicas) into `term`: dense when it has the dense size,
// otherwise a sparse message validated in full. Throws kWorkerFailed naming `algo`, w and the
// sender for a malformed one (a bug: every sender encodes with ChangeMessage).
inline void ParseChanges(const Message& m, std::size_t d, int w, const char* algo, ChangeTerm& term) {
  const std::size_t bytes = m.header.bytes;
  const auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kWorkerFailed, std::string(algo) + ": worker " + std::to_string(w) +
                                              " received a message of " + std::to_string(bytes) +
                                              " bytes from worker " + std::to_string(m.header.sender) +
                                              ": " + what);
  };
  term.at = 0;
  if (bytes == d * sizeof(float)) {
    term.dense = reinterpret_cast<const float*>(m.payload.data());
    term.count = d;
    return;
  }
  term.dense = nullptr;
  const auto* words = reinterpret_cast<const std::uint32_t*>(m.payload.data());
  if (bytes < sizeof(std::uint32_t) || bytes % sizeof(std::uint32_t) != 0) {
    fail("expected " + std::to_string(d * sizeof(float)) + " bytes or a sparse message");
  }
  const std::size_t k = words[0];
  if (k > MaxSparseChanges(d) || bytes != 4 + 8 * k) {
    fail("expected 4 + 8 x " + std::to_string(k) + " bytes for " + std::to_string(k) +
         " changes, at most " + std::to_string(MaxSparseChanges(d)));
  }
  SparseTerm(words, term);
  for (std::size_t j = 0; j < k; ++j) {
    if (term.index[j] >= d || (j > 0 && term.index[j] <= term.index[j - 1])) {
      fail("change " + std::to_string(j) + " has index " + std::to_string(term.index[j]) +
           ", expected increasing indices below " + std::to_string(d));
    }
  }
}

// The round's average over U (see the header), written into x and base. `row` in worker order;
// the self term's index/count are the worker's own changes (its values are read from x).
inline void MixChanges(std::span<ChangeTerm> row, std::span<float> x, std::span<float> base) {
  bool all = false;
  for (const ChangeTerm& t : row) all = all || t.dense != nullptr;
  const std::size_t d = x.size();
  std::size_t next = 0;  // all: the next coordinate
  for (;;) {
    std::size_t u = d;
    if (all) {
      u = next++;
    } else {
      for (const ChangeTerm& t : row) {
        if (t.at < t.count && t.index[t.at] < u) u = t.index[t.at];
      }
    }
    if (u >= d) return;
    float sum = 0;
    for (std::size_t k = 0; k < row.size(); ++k) {
      ChangeTerm& t = row[k];
      float v = base[u];
      if (t.self) {
        v = x[u];
        if (t.dense == nullptr && t.at < t.count && t.index[t.at] == u) ++t.at;
      } else if (t.dense != nullptr) {
        v = t.dense[u];
      } else if (t.at < t.count && t.index[t.at] == u) {
        v = t.value[t.at++];
      }
      sum = k == 0 ? t.weight * v : sum + t.weight * v;
    }
    x[u] = sum;
    base[u] = sum;
  }
}

}  // namespace corral::internal
