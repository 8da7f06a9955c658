// The Cluster (<corral/cluster.h>) of the processes mpirun started, in the internal library
// corral_mpi (CORRAL_MPI). This header is free of mpi.h, so the CLI includes it as it is.
#pragma once

#include <memory>

#include <corral/cluster.h>

namespace corral::internal {

// Initialises MPI (MPI_THREAD_MULTIPLE: the coordinator's collectives run beside the
// transport's progress thread, mpi_transport.h) unless the caller already did, and returns the
// Cluster over MPI_COMM_WORLD; MPI is finalised when it is destroyed (if it initialised it).
// Throws corral::Error (kBadConfig) when the MPI library lacks MPI_THREAD_MULTIPLE.
std::unique_ptr<Cluster> MakeMpiCluster(int* argc, char*** argv);

// Collective, every rank's last call: the largest exit status of any rank, which every rank
// then exits with. A rank that failed (exit_code != 0) waits at most kExitTimeoutS for the
// others: one still inside the run (waiting in a collective for this rank, or dead) makes it end
// the job with MPI_Abort, so no rank hangs. A rank that succeeded waits as long as it takes
// (rank 0 may still be saving the model). One process: exit_code.
inline constexpr int kExitTimeoutS = 5;
int AgreeOnExit(Cluster& cluster, int exit_code);

// Ends every rank of the job with `exit_code` (MPI_Abort): the last resort after an error that
// the other ranks cannot learn of in their own time.
[[noreturn]] void AbortAllRanks(int exit_code);

}  // namespace corral::internal
