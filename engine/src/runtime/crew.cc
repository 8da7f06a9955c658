#include "engine/src/runtime/crew.h"

#include <chrono>
#include <string>

#include <corral/error.h>

namespace corral::internal {

Crew::Crew(int workers, const Placement& placement, Setup setup, Epoch epoch)
    : setup_(std::move(setup)),
      epoch_fn_(std::move(epoch)),
      workers_(std::make_unique<Worker[]>(static_cast<std::size_t>(workers))),
      count_(workers) {
  for (int w = 0; w < count_; ++w) {
    try {
      workers_[w].thread = std::jthread([this, w, &placement] {
        workers_[w].pinned = placement.Bind(w);
        Main(w);
      });
    } catch (const std::exception& e) {
      // No thread for worker w (system_error: a thread or memory limit). The ones started
      // run their setup (which never waits for a peer) and then wait for `go`: StopAndJoin
      // releases them with stop_ set, so they return instead of waiting forever.
      StopAndJoin();
      throw Error(ErrorCode::kWorkerFailed,
                  "cannot start worker thread " + std::to_string(w + 1) + " of " +
                      std::to_string(count_) + ": " + e.what() +
                      " (the system's limit on threads or memory: try fewer --threads)");
    }
  }
  WaitForAll({}, 0);
  for (int w = 0; w < count_; ++w) pinned_ += workers_[w].pinned ? 1 : 0;
  RethrowIfFailed();
}

Crew::~Crew() { StopAndJoin(); }

void Crew::Main(int w) {
  Worker& self = workers_[w];
  try {
    setup_(w);
  } catch (...) {
    Fail(std::current_exception());
  }
  done_.release();
  while (true) {
    self.go.acquire();
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
      epoch_fn_(w, self.epoch, self.steps);
    } catch (...) {
      Fail(std::current_exception());
    }
    done_.release();
  }
}

void Crew::Fail(std::exception_ptr error) {
  if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(error);
}

void Crew::RunEpoch(int epoch, const std::function<void(std::uint64_t)>& tick, int tick_ms) {
  for (int w = 0; w < count_; ++w) {
    workers_[w].epoch = epoch;
    workers_[w].go.release();
  }
  WaitForAll(tick, tick_ms);
  RethrowIfFailed();
}

void Crew::WaitForAll(const std::function<void(std::uint64_t)>& tick, int tick_ms) {
  for (int arrived = 0; arrived < count_;) {
    if (!tick) {
      done_.acquire();
      ++arrived;
    } else if (done_.try_acquire_for(std::chrono::milliseconds(tick_ms))) {
      ++arrived;
    } else {
      tick(steps());
    }
  }
}

std::uint64_t Crew::steps() const {
  std::uint64_t total = 0;
  for (int w = 0; w < count_; ++w) total += workers_[w].steps.load(std::memory_order_relaxed);
  return total;
}

void Crew::StopAndJoin() {
  if (joined_) return;
  joined_ = true;
  stop_.store(true, std::memory_order_relaxed);
  for (int w = 0; w < count_; ++w) workers_[w].go.release();
  for (int w = 0; w < count_; ++w) {
    if (workers_[w].thread.joinable()) workers_[w].thread.join();
  }
}

void Crew::RethrowIfFailed() {
  if (!failed_.load(std::memory_order_acquire)) return;
  StopAndJoin();
  std::rethrow_exception(error_);
}

}  // namespace corral::internal
