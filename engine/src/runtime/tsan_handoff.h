// Debian's oneTBB is not built with ThreadSanitizer, so TSan cannot see how oneTBB hands a task
// to one of its threads and joins it again: what the caller wrote before a parallel call and
// what the tasks read, or what the tasks read and the caller overwrites after the call returns,
// look like races to it. A TsanHandOff states those two edges to TSan around one parallel
// call; in every other build it is empty and compiles to nothing.
//
//   TsanHandOff handoff;            // the caller, before the call: its writes are released
//   parallel_call([&] {
//     handoff.TaskBegins();          // each task acquires them
//     ...;
//     handoff.TaskEnds();            // and releases its own accesses
//   });
//   handoff.Joined();                // the caller, after the call, acquires the tasks' accesses
#pragma once

#if defined(__SANITIZE_THREAD__)
#define CORRAL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CORRAL_TSAN 1
#endif
#endif

#ifdef CORRAL_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace corral::internal {

class TsanHandOff {
 public:
#ifdef CORRAL_TSAN
  TsanHandOff() { __tsan_release(&to_tasks_); }
  void TaskBegins() { __tsan_acquire(&to_tasks_); }
  void TaskEnds() { __tsan_release(&to_caller_); }
  void Joined() { __tsan_acquire(&to_caller_); }

 private:
  char to_tasks_ = 0;   // only their addresses are used, as TSan's synchronisation objects
  char to_caller_ = 0;
#else
  void TaskBegins() {}
  void TaskEnds() {}
  void Joined() {}
#endif
};

}  // namespace corral::internal
