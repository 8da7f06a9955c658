// An embedding program's own communicator (<corral/mpi_cluster.h>), run by mpiexec -n 2
// (ctest label mpi): the program initialises MPI, Corral trains over whichever communicator it
// is given. Over the world it is the run of one process with ranks x threads workers, bit for
// bit; over one communicator per rank each rank trains alone, as Train without a cluster does;
// the ranks are the communicator's, not the world's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <corral/cluster.h>
#include <corral/error.h>
#include <corral/mpi_cluster.h>
#include <corral/synthetic.h>
#include <corral/train.h>

namespace corral {
namespace {

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

const SyntheticSplit& Data() {
  static const SyntheticSplit data = MakeSyntheticClassification(
      {.rows = 1'000, .features = 300, .nnz_per_row = 10, .seed = 7}, 200);
  return data;
}

// A round every step: the automatic period follows measured times, so only a fixed one gives
// the same bits run after run.
TrainConfig DpsgdOn(int threads) {
  return {.algorithm = Algorithm::kDpsgd, .threads = threads, .epochs = 2, .lr = 0.05f,
          .pin = Pin::kNone, .topology = "ring", .gossip_every = 1};
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every rank's result over `comm` against one process's run with all of its workers.
void ExpectOneProcessOf(MPI_Comm comm, int threads_per_rank) {
  const std::unique_ptr<Cluster> cluster = MakeMpiCluster({MPI_Comm_c2f(comm)});
  int comm_rank = 0;
  int comm_ranks = 0;
  MPI_Comm_rank(comm, &comm_rank);
  MPI_Comm_size(comm, &comm_ranks);
  EXPECT_EQ(cluster->rank(), comm_rank);
  EXPECT_EQ(cluster->ranks(), comm_ranks);
  const TrainResult across =
      Train(Data().train, &Data().test, DpsgdOn(threads_per_rank), {}, *cluster);
  EXPECT_EQ(across.threads, comm_ranks * threads_per_rank);
  const TrainResult alone =
      Train(Data().train, &Data().test, DpsgdOn(comm_ranks * threads_per_rank));
  EXPECT_TRUE(SameBits(alone.params, across.params))
      << "world rank " << WorldRank() << ": " << comm_ranks << " ranks x " << threads_per_rank
      << " threads over the program's communicator differ from one process";
  EXPECT_EQ(alone.samples, across.samples);
}

TEST(EmbedderCommunicator, OverTheWorldIsOneProcessOfAllWorkers) {
  ExpectOneProcessOf(MPI_COMM_WORLD, 2);
}

// Ranks numbered backwards: the cluster's ranks are the communicator's, and the run is the same.
TEST(EmbedderCommunicator, ItsRankOrderIsTheClustersOwn) {
  MPI_Comm reversed = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, -WorldRank(), &reversed);
  ExpectOneProcessOf(reversed, 2);
  MPI_Comm_free(&reversed);
}

// One communicator per rank: each rank's run spans its own rank only, side by side with the
// other's, and equals Train without a cluster.
TEST(EmbedderCommunicator, OnePerRankTrainsEachRankAlone) {
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, WorldRank(), 0, &own);
  ExpectOneProcessOf(own, 2);
  MPI_Comm_free(&own);
}

TEST(EmbedderCommunicator, NullIsRefusedByName) {
  try {
    MakeMpiCluster({MPI_Comm_c2f(MPI_COMM_NULL)});
    ADD_FAILURE() << "MakeMpiCluster accepted MPI_COMM_NULL";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("must be an intracommunicator"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the program's, not Corral's
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = failed;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
