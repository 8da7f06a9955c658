#include "engine/src/cluster/mpi_cluster.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <corral/error.h>
#include <corral/mpi_cluster.h>

#include "engine/src/channel/mpi_transport.h"

namespace corral::internal {
namespace {

// Thread safety: the engine's calls come from one thread at a time (cluster.h); the transports
// it makes run their own progress threads beside them, which MPI_THREAD_MULTIPLE allows.
class MpiCluster final : public Cluster {
 public:
  // mpirun's ranks: initialises MPI unless the program did (MpiSession), over MPI_COMM_WORLD.
  MpiCluster(int* argc, char*** argv)
      : session_(std::in_place, argc, argv, MPI_THREAD_MULTIPLE, kWhyMultiple) {
    Join(MPI_COMM_WORLD);
  }
  // The ranks of an embedding program's communicator; MPI is the program's to initialise and
  // finalise (<corral/mpi_cluster.h>).
  explicit MpiCluster(MPI_Comm comm) {
    int initialised = 0;
    int finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (initialised == 0 || finalised != 0) {
      throw Error(ErrorCode::kBadConfig,
                  "MakeMpiCluster: MPI is not initialised (or already finalised): call "
                  "MPI_Init_thread with MPI_THREAD_MULTIPLE first");
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      throw Error(ErrorCode::kBadConfig, "MakeMpiCluster: MPI was initialised with thread level " +
                                             std::to_string(provided) + "; " + kWhyMultiple);
    }
    int inter = 0;
    if (comm == MPI_COMM_NULL || (MPI_Comm_test_inter(comm, &inter), inter != 0)) {
      throw Error(ErrorCode::kBadConfig,
                  "MakeMpiCluster: the communicator must be an intracommunicator, not "
                  "MPI_COMM_NULL or an intercommunicator");
    }
    Join(comm);
  }
  ~MpiCluster() override {
    MPI_Comm_free(&exit_comm_);
    MPI_Comm_free(&comm_);
  }
  MpiCluster(const MpiCluster&) = delete;
  MpiCluster& operator=(const MpiCluster&) = delete;

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  void AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    MPI_Allgather(mine.data(), Count(mine.size(), "a gather"), MPI_BYTE, all.data(),
                  Count(mine.size(), "a gather"), MPI_BYTE, comm_);
  }
  void Broadcast(std::span<std::byte> bytes) override {
    MPI_Bcast(bytes.data(), Count(bytes.size(), "a broadcast"), MPI_BYTE, 0, comm_);
  }
  void Barrier() override { MPI_Barrier(comm_); }

  std::unique_ptr<Transport> MakeTransport(const ShmTransportConfig& config,
                                           std::span<const int> rank_of_worker) override {
    return std::make_unique<MpiTransport>(config, rank_of_worker, comm_);
  }

 private:
  static constexpr const char* kWhyMultiple =
      "training across ranks needs MPI_THREAD_MULTIPLE (the collectives run beside the "
      "transport's progress thread)";

  // Collective over `comm`: our own duplicates, so our collectives never meet the program's.
  void Join(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    // AgreeOnExit's own: a rank that failed calls it while the others may be inside a
    // collective on comm_ (a transport's MPI_Comm_dup, a gather), which it must not match.
    MPI_Comm_dup(comm, &exit_comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
  }

  // MPI counts are ints: a block of 2 GiB or more is refused by name (every rank refuses alike:
  // the sizes are the same on all ranks).
  static int Count(std::size_t bytes, const char* what) {
    if (bytes > static_cast<std::size_t>(INT_MAX)) {
      throw Error(ErrorCode::kBadConfig, std::string("MPI: ") + what + " of " +
                                             std::to_string(bytes) +
                                             " bytes per rank exceeds MPI's 2 GiB count limit");
    }
    return static_cast<int>(bytes);
  }

  friend int corral::internal::AgreeOnExit(Cluster& cluster, int exit_code);

  // mpirun's case only (else the program's MPI). First in, last out: MPI outlives the
  // communicators.
  std::optional<MpiSession> session_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm exit_comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace

std::unique_ptr<Cluster> MakeMpiCluster(int* argc, char*** argv) {
  return std::make_unique<MpiCluster>(argc, argv);
}

}  // namespace corral::internal

namespace corral {

static_assert(std::is_same_v<MPI_Fint, int>, "MpiComm carries a Fortran handle as an int");

std::unique_ptr<Cluster> MakeMpiCluster(MpiComm comm) {
  return std::make_unique<internal::MpiCluster>(MPI_Comm_f2c(comm.fortran_handle));
}

}  // namespace corral

namespace corral::internal {

int AgreeOnExit(Cluster& cluster, int exit_code) {
  auto* mpi = dynamic_cast<MpiCluster*>(&cluster);
  if (mpi == nullptr || mpi->ranks() == 1) return exit_code;
  int all = exit_code;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&exit_code, &all, 1, MPI_INT, MPI_MAX, mpi->exit_comm_, &request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kExitTimeoutS);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return all;
    if (exit_code != 0 && std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "corral: rank %d: the other ranks did not stop within %d s: ending the job\n",
                   mpi->rank(), kExitTimeoutS);
      AbortAllRanks(exit_code);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // bounded: 1 ms a poll
  }
}

void AbortAllRanks(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();  // MPI_Abort does not return; the compiler cannot know
}

}  // namespace corral::internal
