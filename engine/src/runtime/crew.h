// Crew: long-lived worker threads, pinned by a Placement, that run epochs in step with the
// thread that owns the Crew (the coordinator). Between epochs the workers block, so the
// coordinator can evaluate a quiescent model; within an epoch nothing is shared but what the
// algorithm itself shares.
//
// Protocol per epoch: coordinator releases each worker's `go`; each worker runs its epoch and
// releases `done_`; the coordinator acquires `done_` once per worker. Semaphore release/acquire
// pairs order everything a worker wrote in an epoch before the coordinator's evaluation, and
// the coordinator's writes before the next epoch.
//
// Thread safety: all public members are coordinator-only; the callbacks run on the workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <semaphore>
#include <thread>
#include <vector>

#include "engine/src/runtime/placement.h"

namespace corral::internal {

inline constexpr std::size_t kCacheLine = 64;

class Crew {
 public:
  // Runs once on worker w's own thread, after pinning: the place to build (first-touch) the
  // worker's shard and state.
  using Setup = std::function<void(int w)>;
  // Runs epoch `epoch` (0-based) on worker w; stores its running sample count in `steps` now
  // and then (relaxed) for progress reports, and its final count at the end.
  using Epoch = std::function<void(int w, int epoch, std::atomic<std::uint64_t>& steps)>;

  // Starts the workers and waits until each has pinned itself and run `setup`.
  // Throws the first worker error (after joining all workers), or kWorkerFailed naming the
  // worker whose thread could not be created (after joining the ones started).
  Crew(int workers, const Placement& placement, Setup setup, Epoch epoch);
  ~Crew();  // stops and joins the workers
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  // Runs one epoch on every worker and returns when all have finished, calling `tick` with
  // the total step count every `tick_ms` meanwhile. Throws the first worker error (after
  // stopping and joining all workers).
  void RunEpoch(int epoch, const std::function<void(std::uint64_t)>& tick, int tick_ms = 100);

  // Samples processed by all workers (exact between epochs).
  std::uint64_t steps() const;
  int pinned_workers() const { return pinned_; }

 private:
  struct alignas(kCacheLine) Worker {
    // W: the worker during an epoch; R: coordinator for progress. relaxed: a progress
    // estimate; exact counts are read after done_ is acquired.
    std::atomic<std::uint64_t> steps{0};
    std::binary_semaphore go{0};
    int epoch = 0;         // W: coordinator before go.release(); R: worker after go.acquire()
    bool pinned = false;   // W: worker before its first done_.release(); R: coordinator after
    std::jthread thread;
  };

  void Main(int w);
  void WaitForAll(const std::function<void(std::uint64_t)>& tick, int tick_ms);
  void Fail(std::exception_ptr error);
  void StopAndJoin();
  void RethrowIfFailed();

  Setup setup_;
  Epoch epoch_fn_;
  std::unique_ptr<Worker[]> workers_;
  int count_;
  int pinned_ = 0;
  std::counting_semaphore<> done_{0};
  // W: coordinator before releasing go; R: workers after acquiring go (the semaphore orders it).
  std::atomic<bool> stop_{false};
  // W: the first failing worker (wins the exchange); R: coordinator after acquiring done_.
  // acq_rel on the exchange so the winner's error_ write is seen by whoever reads failed_.
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
  bool joined_ = false;
};

}  // namespace corral::internal
