// Doorbell: how a worker sleeps until one of its channels changes, without spinning without
// bound (tests run 16 workers on 2 cores) and without missing a wake-up.
//
// Each worker owns one Doorbell. Anyone who changes something the owner may be waiting for
// (pushed a message to it, returned a free slot to it, aborted the transport) first makes that
// change visible (a release store, e.g. spsc_queue::push) and then calls Ring(). The owner
// waits with WaitUntil(ready, stop): it spins a little (kSpins pauses) re-checking `ready`,
// then blocks in the kernel (std::atomic<uint32_t>::wait, a futex on Linux) until the count
// moves.
//
// Memory ordering (why no wake-up is lost). Ring is `change; count.fetch_add(1, seq_cst);
// count.notify_all()`. The waiter does `v = count.load(acquire); if (ready()) return;
// count.wait(v)`. The count has one modification order. Either
//  (a) the waiter's load read the ringer's increment (or a later value; increments are RMWs,
//      so they continue its release sequence): the increment synchronises with the load, so
//      the change, sequenced before the increment, happens before the re-check of ready(),
//      which therefore sees it and returns; or
//  (b) the load read an earlier value v: the increment is later in modification order, so
//      wait(v) either sees count != v and returns at once, or is already blocked when the
//      ringer's notify_all (sequenced after the increment) arrives and is woken.
// Either way the waiter re-checks ready() after the change. The same argument covers `stop`:
// Abort stores stop before ringing, so a waiter woken by that ring (or that read its
// increment) sees stop == true; stop itself can therefore be read relaxed.
//
// Thread safety: Ring() from any thread; WaitUntil() by the owning worker only (one waiter per
// bell, though several would also be correct: notify_all).
#pragma once

#include <atomic>
#include <cstdint>

#include "engine/src/runtime/crew.h"  // kCacheLine

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
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

class alignas(kCacheLine) Doorbell {
 public:
  // Pauses before blocking. A few hundred pauses cost a few microseconds: long enough to catch
  // a neighbour that is about to send in a balanced round, short enough not to steal a shared
  // core from the thread we wait for when workers outnumber cores.
  static constexpr int kSpins = 256;

  // Announces a change the owner may be waiting for. Call after the change is published.
  void Ring() {
    // seq_cst, where release would do for the argument above: libstdc++'s notify skips the
    // futex wake when its own waiter count (seq_cst) reads zero, a store-buffering handshake
    // that needs this increment in the single total order too. Same cost on x86 (lock xadd).
    count_.fetch_add(1, std::memory_order_seq_cst);
    count_.notify_all();
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
    while (true) {
      const std::uint32_t seen = count_.load(std::memory_order_acquire);
      if (ready()) return true;
      if (stop.load(std::memory_order_relaxed)) return false;
      count_.wait(seen, std::memory_order_acquire);
    }
  }

 private:
  // W: any thread in Ring() (fetch_add, seq_cst >= release); R: the owner in WaitUntil
  // (acquire). The
  // value means nothing; only that it moved. Wrap-around is harmless in practice: a waiter
  // could only sleep through a ring if exactly 2^32 rings fell between its load and its wait.
  std::atomic<std::uint32_t> count_{0};
};

}  // namespace corral::internal
