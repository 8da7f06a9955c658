// A worker thread that cannot be created: the Crew releases and joins the workers it started
// and reports which one failed, instead of joining workers that wait for `go` forever.
// In a forked child (it lowers its own address-space limit) with an alarm, so a regression
// fails the test instead of hanging it.
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <corral/error.h>

#include "engine/src/runtime/crew.h"
#include "engine/src/runtime/placement.h"

namespace corral {
namespace {

int ThreadsOfThisProcess() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (const dirent* entry = readdir(dir)) count += entry->d_name[0] != '.' ? 1 : 0;
    closedir(dir);
  }
  return count;
}

// Exit codes of the child, each a distinct failure.
enum Outcome { kReleased = 0, kNoError = 10, kWrongError = 11, kThreadsLeft = 12, kSetupFailed = 13 };

int CrewWithTooLittleMemory() {
  constexpr std::size_t kStack = std::size_t{256} << 20;  // 256 MiB per thread
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, kStack) != 0 || pthread_setattr_default_np(&attr) != 0) {
    return kSetupFailed;
  }
  // Room for about two worker stacks beside what the process already maps.
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) return kSetupFailed;
  std::fclose(statm);
  limit.rlim_cur = pages * static_cast<unsigned long>(sysconf(_SC_PAGESIZE)) + 2 * kStack + (64 << 20);
  if (setrlimit(RLIMIT_AS, &limit) != 0) return kSetupFailed;

  std::atomic<int> set_up{0};
  try {
    const internal::Placement placement("", Pin::kNone, 16);
    internal::Crew crew(
        16, placement, [&](int) { set_up.fetch_add(1, std::memory_order_relaxed); },
        [](int, int, std::atomic<std::uint64_t>&) {});
    return kNoError;
  } catch (const Error& e) {
    const std::string what = e.what();
    std::fprintf(stderr, "%s (%d workers had started)\n", what.c_str(), set_up.load());
    if (e.code() != ErrorCode::kWorkerFailed || what.find("cannot start worker thread ") != 0 ||
        what.find(" of 16: ") == std::string::npos || set_up.load() < 1) {
      return kWrongError;
    }
  }
  // Every started worker was joined: only this thread is left.
  return ThreadsOfThisProcess() == 1 ? kReleased : kThreadsLeft;
}

TEST(CrewStart, AThreadThatCannotStartReleasesTheOthersAndIsReported) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit an address-space limit";
#endif
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a hang ends the child with SIGALRM
    _exit(CrewWithTooLittleMemory());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung or crashed: signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), kReleased);
}

}  // namespace
}  // namespace corral
