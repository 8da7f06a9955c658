// Embedding Corral in an MPI program: the program owns MPI and its communicators, and Corral
// trains over the communicator it is given.
//
// The ranks split into two groups (even and odd ranks); each group trains its own dpsgd model
// over its communicator, 2 threads a rank. Run with any number of ranks:
//   mpirun -np 4 example_mpi_groups
// Link corral::mpi (installed when Corral was built with CORRAL_MPI) besides corral::corral.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include <corral/corral.h>
#include <corral/mpi_cluster.h>

namespace {

int Run(MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm group = MPI_COMM_NULL;  // the program's own communicator: even or odd ranks
  MPI_Comm_split(world, rank % 2, rank, &group);
  int status = 1;
  {
    // Every group trains on the same synthetic set; each rank of a group trains its rows.
    const corral::SyntheticSplit data = corral::MakeSyntheticClassification(
        {.rows = 8'000, .features = 300, .nnz_per_row = 10, .seed = 5}, 2'000);
    const corral::TrainConfig config{.algorithm = corral::Algorithm::kDpsgd,
                                     .threads = 2,
                                     .epochs = 5,
                                     .pin = corral::Pin::kNone,  // mpirun binds the ranks
                                     .topology = "ring"};
    const std::unique_ptr<corral::Cluster> cluster = corral::MakeMpiCluster({MPI_Comm_c2f(group)});
    const corral::TrainResult result = corral::Train(data.train, &data.test, config, {}, *cluster);
    const corral::EvalPoint& last = result.history.back();
    if (cluster->rank() == 0) {  // one voice per group
      std::printf("group %d: %d ranks x %d threads = %d workers, objective %.5f, "
                  "test accuracy %.4f\n",
                  rank % 2, cluster->ranks(), config.threads, result.threads, last.objective,
                  last.test_acc.value_or(0));
    }
    status = std::isfinite(last.objective) && last.test_acc.value_or(0) > 0.8 ? 0 : 1;
  }  // the Cluster frees its duplicates of `group` before the program frees `group`
  MPI_Comm_free(&group);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // what Corral needs
  int status = 1;
  try {
    status = Run(MPI_COMM_WORLD);
  } catch (const corral::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, e.IsUsageError() ? 2 : 1);  // the other ranks may wait for this one
  }
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
