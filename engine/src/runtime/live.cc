#include "engine/src/runtime/live.h"

#include <algorithm>
#include <utility>

#include <corral/error.h>

namespace corral {

LiveModel::LiveModel() : impl_(std::make_unique<Impl>()) {}
LiveModel::~LiveModel() = default;

bool LiveModel::Snapshot(std::vector<float>& out) const {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->copy) {
    out.resize(impl_->num_params);
    impl_->copy(out);
  } else if (impl_->has_last) {
    out = impl_->last;
  } else {
    return false;
  }
  ++impl_->served;
  return true;
}

bool LiveModel::training() const {
  const std::lock_guard lock(impl_->mutex);
  return static_cast<bool>(impl_->copy);
}

std::uint64_t LiveModel::snapshots() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->served;
}

namespace internal {

LiveAttachment::LiveAttachment(LiveModel* live, std::size_t num_params,
                               std::function<void(std::span<float>)> copy) {
  if (live == nullptr) return;
  LiveModel::Impl& impl = LiveAccess::Of(*live);
  const std::lock_guard lock(impl.mutex);
  if (impl.copy) {
    throw Error(ErrorCode::kBadConfig,
                "TrainObserver::live is already attached to a running training run (one run "
                "per LiveModel at a time)");
  }
  impl.copy = std::move(copy);
  impl.num_params = num_params;
  impl_ = &impl;
}

LiveAttachment::~LiveAttachment() {
  if (impl_ == nullptr) return;
  const std::lock_guard lock(impl_->mutex);
  impl_->copy = nullptr;
}

std::unique_lock<std::mutex> LiveAttachment::Exclusive() {
  if (impl_ == nullptr) return {};
  return std::unique_lock(impl_->mutex);
}

void LiveAttachment::Finish(std::span<const float> params) {
  if (impl_ == nullptr) return;
  const std::lock_guard lock(impl_->mutex);
  impl_->last.assign(params.begin(), params.end());
  impl_->has_last = true;
  impl_->copy = nullptr;
}

void ReplicaTap::Init(int workers, std::size_t num_params) {
  slots_ = std::vector<SlotState>(static_cast<std::size_t>(workers));
  for (SlotState& s : slots_) s.copy.resize(num_params);
}

void ReplicaTap::Park(int w, std::span<const float> x) {
  {
    const std::lock_guard lock(mutex_);
    SlotState& s = Slot(w);
    std::copy(x.begin(), x.end(), s.copy.begin());
    s.parked = true;
  }
  served_.notify_all();
}

void ReplicaTap::Unpark(int w) {
  const std::lock_guard lock(mutex_);
  Slot(w).parked = false;
}

void ReplicaTap::Serve(int w, std::span<const float> x, std::uint64_t wanted) {
  {
    const std::lock_guard lock(mutex_);
    SlotState& s = Slot(w);
    std::copy(x.begin(), x.end(), s.copy.begin());
    s.served = wanted;
    s.seen = wanted;
  }
  served_.notify_all();
}

void ReplicaTap::Collect(
    const std::function<void(std::span<const std::span<const float>>)>& f) {
  std::unique_lock lock(mutex_);
  const std::uint64_t wanted = request_.load(std::memory_order_relaxed) + 1;
  request_.store(wanted, std::memory_order_relaxed);
  served_.wait(lock, [&] {
    return std::all_of(slots_.begin(), slots_.end(),
                       [&](const SlotState& s) { return s.parked || s.served == wanted; });
  });
  std::vector<std::span<const float>> copies;
  for (const SlotState& s : slots_) copies.emplace_back(s.copy);
  f(copies);
}

}  // namespace internal
}  // namespace corral
