// Training across the ranks of an MPI communicator that an embedding program owns.
//
// Programs that use MPI include this header and link `corral::mpi` (installed when Corral was
// built with CORRAL_MPI) besides `corral::corral`. Like every public header it is free of
// mpi.h: the communicator crosses as its Fortran handle (MPI_Comm_c2f), the MPI standard's way
// to pass a handle through code compiled without the caller's mpi.h.
//
//   MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
//   {
//     auto cluster = corral::MakeMpiCluster({MPI_Comm_c2f(MPI_COMM_WORLD)});
//     corral::TrainResult result = corral::Train(train, &test, config, {}, *cluster);
//   }  // the Cluster goes before MPI does
//   MPI_Finalize();
//
// Any intracommunicator will do: a program that splits its ranks into groups trains one model
// per group, each over its group's communicator (docs/embedding.md, examples/mpi_groups.cc).
#pragma once

#include <memory>

#include <corral/cluster.h>

namespace corral {

// An MPI communicator by its Fortran handle: {MPI_Comm_c2f(comm)}.
struct MpiComm {
  int fortran_handle;
};

// Collective over `comm`: the Cluster of its ranks (rank() is the rank in `comm`). It works on
// its own duplicates of `comm`, so its collectives never match the program's, and frees them
// when destroyed, which must happen before MPI_Finalize. Does not initialise or finalise MPI.
// Throws corral::Error (kBadConfig) when MPI is not initialised, was initialised below
// MPI_THREAD_MULTIPLE (the engine's collectives run beside the transport's progress thread), or
// `comm` is MPI_COMM_NULL or an intercommunicator.
std::unique_ptr<Cluster> MakeMpiCluster(MpiComm comm);

}  // namespace corral
