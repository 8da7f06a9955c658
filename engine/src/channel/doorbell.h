// Doorbell: how a worker sleeps until one of its channels changes, without spinning without
// bound (tests run 16 workers on 2 cores) and without missing a wake-up.
//
// Each worker owns one Doorbell. Anyone who changes something the owner may be waiting for
// (pushed a message to it, returned a free slot to it, aborted the transport) first makes that
// change visible (a release store, e.g. spsc_queue::push) and then calls Ring(). The owner
// waits with WaitUntil(ready, stop): it spins a little (kSpins pauses, then kYields yields)
// re-checking `ready`, then announces itself as a sleeper and blocks in the kernel (a futex on Linux) until the
// count moves.
//
// Why not std::atomic<uint32_t>::wait/notify_all (what this used before): libstdc++ 12 keeps
// its waiter counts in a table of 16 entries keyed by bits 2..5 of the address, so every
// cache-line-aligned bell shares entry 0: while any worker of the process slept, every Ring
// of every bell made a futex-wake system call; its wait spun again with 4 sched_yield calls
// before sleeping; and every Ring was a locked add on the owner's line, a cross-core transfer
// even while the owner was only spinning on its queues. Here each bell counts its own
// sleepers, and a Ring that finds none costs a compiler barrier and a read of a line that stays
// shared.
//
// Memory ordering (why no wake-up is lost). Ring is `change; F1; if (sleepers.load() != 0) {
// count.fetch_add(1, release); wake }`. A waiter that found ready() false while spinning does
// `sleepers.fetch_add(1); F2; v = count.load(acquire); if (!ready()) sleep while count == v;
// sleepers.fetch_sub(1)`. F1 and F2 must keep each side's store before its load (Dekker's
// pattern); they are one of two pairs, chosen once per process (Fences below):
//
// Asymmetric (Linux with membarrier(2), the normal case): F1 is a compiler barrier only, F2 is
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which returns only after every other running
// thread of the process has passed a point where its memory accesses match program order (an
// interrupt and a full barrier on its CPU; a thread not running passed one when it was switched
// out), with full barriers around it on the caller. Take a ringer's point P. If its sleepers
// load comes after P, it runs after the waiter's increment became visible (before F2), so it
// sees the sleeper and wakes it (as in the second case below). If the load comes before P, so
// does the change before it (program order, kept by the compiler barrier), which is then
// visible when F2 returns: the waiter's ready() sees it and it does not sleep. This is the
// pattern of userspace RCU and folly's asymmetric barriers: the cost moves from every Ring
// (an mfence, which also waits for the ring's message stores to drain: a9a `dpsgd
// --gossip-every 1` measured 2.0-2.3M samples/s with it, 2.6-2.8M without) to the sleep path,
// which already makes a futex system call.
//
// Symmetric (no membarrier: another OS, an old kernel, a sandbox that refuses the call): F1
// and F2 are seq_cst fences, ordered in the single total order S of seq_cst operations:
//  - F1 before F2: the change is sequenced before F1 and ready()'s read after F2, so the read
//    sees the change (C++20 [atomics.order] p4.4: were it coherence-ordered before the change,
//    F2 would precede F1): the waiter returns without sleeping.
//  - F2 before F1: likewise the ringer's sleepers load sees the waiter's increment, so it
//    increments count and wakes. The waiter either read that increment as v (acquire: it then
//    sees the change, sequenced before it), or sleeps with an older v: the kernel checks
//    count == v and queues the waiter under one lock, which the wake takes after the
//    increment, so the waiter sees count != v or is woken, and its loop re-checks ready().
// Either way the same argument covers `stop`: Abort stores stop before ringing, so a waiter
// either sees it or is woken; stop itself can therefore be read relaxed. Spinners need no ring
// at all: they poll ready() and stop themselves.
//
// Thread safety: Ring() from any thread; WaitUntil() by the owning worker only (one waiter per
// bell, though several would also be correct: the wake wakes all).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "engine/src/runtime/crew.h"  // kCacheLine

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#endif

namespace corral::internal {

// A CPU hint inside spin loops: lets the sibling hyper-thread run and saves power.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A seq_cst fence. ThreadSanitizer does not model fences (GCC 12 warns, -Wtsan); the bell
// needs it not to: the fences order wake-ups only, no plain data is published through them.
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
inline void SeqCstFence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic pop
#endif

// F1 and F2 of the Doorbell's argument, the asymmetric pair where the kernel offers it. The
// choice is made once (a function-local static: the first caller registers, every later one
// reads the same value), so every ringer and waiter of the process use the same pair.
class Fences {
 public:
  // F1, in every Ring.
  static void Light() {
    if (Asymmetric()) {
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the compiler keeps program order
    } else {
      SeqCstFence();
    }
  }
  // F2, before a waiter sleeps. False: the asymmetric barrier failed (the kernel refused a call
  // it accepted at registration; not expected), so ringers may miss this sleeper: the caller
  // then sleeps with a timeout instead.
  [[nodiscard]] static bool Heavy() {
    SeqCstFence();
#if defined(__linux__)
    if (Asymmetric()) return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
    return true;
  }
  static bool Asymmetric() {
    static const bool registered = [] {
#if defined(__linux__)
      return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
      return false;
#endif
    }();
    return registered;
  }
};

class alignas(kCacheLine) Doorbell {
 public:
  // Pauses before blocking. A few hundred pauses cost a few microseconds: long enough to catch
  // a neighbour that is about to send in a balanced round, short enough not to steal a shared
  // core from the thread we wait for when workers outnumber cores.
  static constexpr int kSpins = 256;
  // Then yields to whatever else this core has to run (sched_yield), re-checking in between,
  // before sleeping: with more runnable threads than cores the neighbour we wait for is often
  // queued behind us, and a yield lets it run without the futex sleep and wake-up's latency.
  // libstdc++'s atomic wait (what this used before) yielded 4 times; see docs/algorithms.md,
  // "Cheap rounds", for what this measured.
  static constexpr int kYields = 16;
  // A sleeper whose F2 failed (Fences::Heavy) re-checks this often instead of trusting a ring.
  static constexpr std::chrono::nanoseconds kUnheardSleep{1'000'000};

  // Announces a change the owner may be waiting for. Call after the change is published.
  void Ring() {
    // F1 in the header's argument: keeps the change (already published) before the check.
    Fences::Light();
    // relaxed: the fences order it (header). Its line is written only when the owner goes to
    // sleep and back, so a ring while the owner spins reads a shared line: no transfer.
    if (sleepers_.load(std::memory_order_relaxed) == 0) return;
    // release: a waiter that reads this increment (acquire) sees the change before it.
    count_.fetch_add(1, std::memory_order_release);
    Wake();
  }

  // Returns true as soon as ready() holds, false if stop is (or becomes) set first.
  // `ready` must only read state that changers publish before ringing this bell.
  template <class Ready>
  bool WaitUntil(Ready&& ready, const std::atomic<bool>& stop) {
    for (int spin = 0; spin < kSpins; ++spin) {
      if (ready()) return true;
      if (stop.load(std::memory_order_relaxed)) return false;
      CpuRelax();
    }
    for (int turn = 0; turn < kYields; ++turn) {
      if (ready()) return true;
      if (stop.load(std::memory_order_relaxed)) return false;
      std::this_thread::yield();
    }
    while (true) {
      // relaxed, then F2 in the header's argument: a ringer after F2 sees this sleeper.
      sleepers_.fetch_add(1, std::memory_order_relaxed);
      const bool heard = Fences::Heavy();
      // acquire: reading a ringer's increment makes its change visible to ready().
      const std::uint32_t seen = count_.load(std::memory_order_acquire);
      const bool done = ready();
      const bool stopped = !done && stop.load(std::memory_order_relaxed);
      if (!done && !stopped) Sleep(seen, heard);
      // relaxed: a ringer that still sees this sleeper only makes a wake nobody needed.
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      if (done) return true;
      if (stopped) return false;
    }
  }

 private:
#if defined(__linux__)
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                std::atomic<std::uint32_t>::is_always_lock_free);
  // Blocks while count_ == seen (the kernel checks it under its queue lock); returns on a
  // wake, a signal, or at once if it moved; after kUnheardSleep if ringers may not see us.
  void Sleep(std::uint32_t seen, bool heard) {
    const timespec unheard{0, kUnheardSleep.count()};
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&count_), FUTEX_WAIT_PRIVATE, seen,
            heard ? nullptr : &unheard, nullptr, 0);
  }
  void Wake() {
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&count_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
  }
#else
  void Sleep(std::uint32_t seen, bool /*heard: always, fences are symmetric here*/) {
    count_.wait(seen, std::memory_order_acquire);
  }
  void Wake() { count_.notify_all(); }
#endif

  // W: a thread in Ring() that saw a sleeper (fetch_add, release); R: the owner in WaitUntil
  // (acquire) and the kernel. The value means nothing; only that it moved. Wrap-around is harmless in practice: a waiter
  // could only sleep through a ring if exactly 2^32 rings fell between its load and its wait.
  std::atomic<std::uint32_t> count_{0};
  // W: the owner, +1 before it may sleep and -1 after; R: ringers (relaxed between the two
  // fences, see the header).
  std::atomic<std::uint32_t> sleepers_{0};
};

}  // namespace corral::internal
