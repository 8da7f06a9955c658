// Wide access to a shared model (internal): the dense kernels' loads and stores of a shared
// Params several coordinates at a time, and the dot product and proximal update built on them.
//
// Params (params.h) reads and writes one coordinate at a time through std::atomic_ref<float>.
// C++ has no atomic vector and compilers do not combine atomic accesses, so a dense row's dot
// and update over the shared model ran one scalar at a time: 3% of the bandwidth bound on 8 KB
// rows (issue #23). Relaxed 64-bit atomic words put together into vectors were slower still
// (each word goes through a register; measured 0.6x the scalar loop on 2,000 features).
//
// Here a wide access is one x86 instruction in an extended asm statement: `vmovups` (AVX, 8
// floats) or `movups` (SSE2, the x86-64 baseline: 4 floats). Why this is defined:
// - An asm statement is not an access to a C++ object by the abstract machine, so it cannot be
//   a data race in the language's sense; its meaning is the instruction's ([dcl.asm]: it is
//   implementation-defined, and GCC defines it as the instruction). Its "m" operand names
//   exactly the bytes it reads or writes, so the compiler neither caches the shared coordinates
//   across it nor moves its own accesses to them over it.
// - The hardware's meaning is what Params' relaxed accesses promise. A vector load or store of
//   naturally aligned floats may be carried out as several accesses (Intel SDM vol. 3, 9.1.1;
//   AMD APM vol. 2, 7.3.2), but they split at 8-byte or cache-line boundaries, never inside an
//   aligned 4-byte coordinate: each coordinate is read and written whole, and the vector as a
//   whole is not atomic (its coordinates may come from different workers' writes), which is
//   the asynchrony HOGWILD! allows. x86-TSO orders a plain mov at least as strongly as
//   memory_order_relaxed does.
//   W: any worker (WideStore), R: any worker (WideLoad); beside Params' Load and Store on the
//   same coordinates (the evaluator, the scalar tails).
//
// Sanitizer builds (TSan and ASan cannot see inside asm) and other architectures take the
// same code with each vector's lanes moved by Params-style relaxed std::atomic_ref accesses
// (kWideAsm false): the same vector arithmetic in the same order, so the same bits, and the
// sanitizers check every access. tests/wide_params_test.cc holds both variants to the same
// bits and to a double-precision reference.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <span>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <corral/params.h>

namespace corral::detail {

// The shared model's storage, for the kernels below.
struct ParamsAccess {
  static float* Data(Params w) { return w.data_; }
};

#if defined(__AVX__)
inline constexpr std::size_t kWideLanes = 8;
#else
inline constexpr std::size_t kWideLanes = 4;
#endif
using WideFloats = float __attribute__((vector_size(kWideLanes * sizeof(float))));

// Whether this target has the instructions (tests hold both variants to the same bits), and
// whether the kernels use them.
#if defined(__x86_64__) && defined(__SSE2__)
inline constexpr bool kWideAsmAvailable = true;
#else
inline constexpr bool kWideAsmAvailable = false;
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kWideAsm = false;
#else
inline constexpr bool kWideAsm = kWideAsmAvailable;
#endif

// Shared coordinates p[0, kWideLanes): one instruction (kAsm), else lane by lane, relaxed.
template <bool kAsm>
inline WideFloats WideLoad(const float* p) {
  static_assert(!kAsm || kWideAsmAvailable);
  WideFloats v;
  if constexpr (kAsm) {
#if defined(__AVX__)
    asm("vmovups %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const float(*)[kWideLanes]>(p)));
#elif defined(__SSE2__)
    asm("movups %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const float(*)[kWideLanes]>(p)));
#endif
  } else {
    for (std::size_t i = 0; i < kWideLanes; ++i) {
      // const_cast: atomic_ref needs a non-const object; a load does not modify it.
      v[i] = std::atomic_ref<float>(const_cast<float&>(p[i])).load(std::memory_order_relaxed);
    }
  }
  return v;
}

template <bool kAsm>
inline void WideStore(float* p, WideFloats v) {
  static_assert(!kAsm || kWideAsmAvailable);
  if constexpr (kAsm) {
#if defined(__AVX__)
    asm("vmovups %1, %0" : "=m"(*reinterpret_cast<float(*)[kWideLanes]>(p)) : "x"(v));
#elif defined(__SSE2__)
    asm("movups %1, %0" : "=m"(*reinterpret_cast<float(*)[kWideLanes]>(p)) : "x"(v));
#endif
  } else {
    for (std::size_t i = 0; i < kWideLanes; ++i) {
      std::atomic_ref<float>(p[i]).store(v[i], std::memory_order_relaxed);
    }
  }
}

// Private (unshared) floats p[0, kWideLanes).
inline WideFloats PrivateLoad(const float* p) {
  WideFloats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline WideFloats Broadcast(float f) {
  WideFloats v;
  for (std::size_t i = 0; i < kWideLanes; ++i) v[i] = f;
  return v;
}

// acc + a * b: one rounding where the target has FMA, else two. Written out because GCC's
// contraction of a * b + c into an FMA depends on the loop around it (measured: WideDot's main
// loop contracted, its last vector loop and scalar tail did not), and WideShrinkUpdateDot
// must sum exactly as WideDot does wherever each is inlined.
inline WideFloats MulAdd(WideFloats acc, WideFloats a, WideFloats b) {
#if defined(__FMA__) && defined(__AVX__)
  return _mm256_fmadd_ps(a, b, acc);
#elif defined(__FMA__)
  return _mm_fmadd_ps(a, b, acc);
#elif defined(__x86_64__)
  WideFloats product = a * b;
  asm("" : "+x"(product));  // the product stays apart from the add: no contraction
  return acc + product;
#else
  for (std::size_t i = 0; i < kWideLanes; ++i) acc[i] = __builtin_fmaf(a[i], b[i], acc[i]);
  return acc;
#endif
}
inline float MulAdd(float acc, float a, float b) {
#if defined(__FMA__) || !defined(__x86_64__)
  return __builtin_fmaf(a, b, acc);
#else
  float product = a * b;
  asm("" : "+x"(product));
  return acc + product;
#endif
}

// sum_u w_u x_u over u < x.size() <= w.size(), in a fixed order: four vector accumulators, each
// lane a strided partial sum, added pairwise, then the lanes in order, then the scalar tail.
// `ahead` (x.size() floats; may be x itself): the caller's next row, asked for line by line
// alongside x's. A shuffled row of 8 KB otherwise misses the cache on every line: measured on
// a 2,000-feature set, 1 thread, --shuffle index, 8 epochs: 0.60-0.71M samples/s without it,
// 0.80-0.91M with the whole row asked for at the step's start, 1.07-1.11M spread over the
// margin's loop (the memory system takes a few lines at a time; a burst of 128 waits).
template <bool kAsm = kWideAsm>
float WideDot(Params w, std::span<const float> x, const float* ahead) {
  const float* p = ParamsAccess::Data(w);
  const std::size_t n = x.size();
  WideFloats a0{}, a1{}, a2{}, a3{};
  std::size_t u = 0;
  for (; u + 4 * kWideLanes <= n; u += 4 * kWideLanes) {
    for (std::size_t line = 0; line < 4 * kWideLanes * sizeof(float); line += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(ahead + u) + line);
    }
    a0 = MulAdd(a0, WideLoad<kAsm>(p + u), PrivateLoad(&x[u]));
    a1 = MulAdd(a1, WideLoad<kAsm>(p + u + kWideLanes), PrivateLoad(&x[u + kWideLanes]));
    a2 = MulAdd(a2, WideLoad<kAsm>(p + u + 2 * kWideLanes), PrivateLoad(&x[u + 2 * kWideLanes]));
    a3 = MulAdd(a3, WideLoad<kAsm>(p + u + 3 * kWideLanes), PrivateLoad(&x[u + 3 * kWideLanes]));
  }
  for (; u + kWideLanes <= n; u += kWideLanes) a0 = MulAdd(a0, WideLoad<kAsm>(p + u), PrivateLoad(&x[u]));
  const WideFloats a = (a0 + a1) + (a2 + a3);
  float sum = 0;
  for (std::size_t i = 0; i < kWideLanes; ++i) sum += a[i];
  for (; u < n; ++u) sum = MulAdd(sum, w.Load(u), x[u]);
  return sum;
}

// w_u <- (w_u - step * x_u) * shrink_u for u < x.size() <= w.size(): linear_step.h's update of
// a dense row, each coordinate's float operations as there.
template <bool kAsm = kWideAsm>
void WideShrinkUpdate(Params w, std::span<const float> x, float step, const float* shrink) {
  float* p = ParamsAccess::Data(w);
  const std::size_t n = x.size();
  std::size_t u = 0;
  const WideFloats minus_step = Broadcast(-step);
  for (; u + kWideLanes <= n; u += kWideLanes) {
    WideStore<kAsm>(p + u, MulAdd(WideLoad<kAsm>(p + u), minus_step, PrivateLoad(&x[u])) * PrivateLoad(shrink + u));
  }
  for (; u < n; ++u) w.Store(u, MulAdd(w.Load(u), -step, x[u]) * shrink[u]);
}

// WideShrinkUpdate with one shrink factor for every coordinate (a dense set's: every row holds
// every feature, so d_u = n), and, from the values it stores, the dot product of the updated
// model with the row `next` (as long as x), summed in WideDot's order and operations: what
// WideDot(w, next) returns right after the update when no other worker writes, in one pass
// over the model instead of two. `ahead`: the row the caller reads after `next`, asked for as
// in WideDot.
template <bool kAsm = kWideAsm>
float WideShrinkUpdateDot(Params w, std::span<const float> x, float step, float shrink,
                          const float* next, const float* ahead) {
  float* p = ParamsAccess::Data(w);
  const std::size_t n = x.size();
  const WideFloats minus_step = Broadcast(-step);
  const auto update = [&](std::size_t u) {
    const WideFloats v = MulAdd(WideLoad<kAsm>(p + u), minus_step, PrivateLoad(&x[u])) * shrink;
    WideStore<kAsm>(p + u, v);
    return v;
  };
  WideFloats a0{}, a1{}, a2{}, a3{};
  std::size_t u = 0;
  for (; u + 4 * kWideLanes <= n; u += 4 * kWideLanes) {
    for (std::size_t line = 0; line < 4 * kWideLanes * sizeof(float); line += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(ahead + u) + line);
    }
    a0 = MulAdd(a0, update(u), PrivateLoad(next + u));
    a1 = MulAdd(a1, update(u + kWideLanes), PrivateLoad(next + u + kWideLanes));
    a2 = MulAdd(a2, update(u + 2 * kWideLanes), PrivateLoad(next + u + 2 * kWideLanes));
    a3 = MulAdd(a3, update(u + 3 * kWideLanes), PrivateLoad(next + u + 3 * kWideLanes));
  }
  for (; u + kWideLanes <= n; u += kWideLanes) a0 = MulAdd(a0, update(u), PrivateLoad(next + u));
  const WideFloats a = (a0 + a1) + (a2 + a3);
  float sum = 0;
  for (std::size_t i = 0; i < kWideLanes; ++i) sum += a[i];
  for (; u < n; ++u) {
    const float v = MulAdd(w.Load(u), -step, x[u]) * shrink;
    w.Store(u, v);
    sum = MulAdd(sum, v, next[u]);
  }
  return sum;
}

}  // namespace corral::detail
