// The three ways to sum d floats across ranks, timed alone (issue #18; bench/mpi_allreduce.py
// runs it beside the training runs, docs/algorithms.md "sync across ranks"):
//
//   mpiexec -n 2 build/bench/corral_allreduce_bench D [steps, default 200] [workers per rank, 1]
//       [the ring's chunk in floats, default 0: SumRing::DefaultChunk]
//   (as root add --allow-run-as-root; on 2 cores add --oversubscribe)
//
//   gather  sync's --allreduce gather: every rank's records (per worker d floats, its L2 weight
//           and the 24-byte head) gathered by Cluster::AllGather (MPI_Allgather), then the n
//           gradients folded in worker order, as the workers' Reduce does;
//   ring    --allreduce ring: SumRing (engine/src/modes/sum_ring.h) over the cluster's transport,
//           the running sum in one process's order;
//   mpi     MPI_Allreduce(MPI_SUM): MPI's own all-reduce, whose summation order MPI leaves open
//           (not one process's bits: the yardstick, not an option of corral train).
//
// Every step starts at an MPI_Barrier, so a step's time is the reduction's alone; the three
// run interleaved, step by step, and rank 0 prints each one's median step in milliseconds
// (a line "METHOD ms" each, then the ratios). Every rank also checks that the ring's totals are
// the gather's sum bit for bit (one order), and exits 1 if not: at any number of ranks, which
// the tests (2 ranks) do not cover.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <corral/cluster.h>

#include "engine/src/cluster/mpi_cluster.h"
#include "engine/src/modes/sum_ring.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<corral::Cluster> cluster = corral::internal::MakeMpiCluster(&argc, &argv);
  if (argc < 2) {
    if (cluster->rank() == 0) {
      std::fprintf(stderr, "usage: corral_allreduce_bench D [steps] [T] [chunk]\n");
    }
    return 2;
  }
  const std::size_t d = std::strtoull(argv[1], nullptr, 10);
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  const std::size_t local = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const std::size_t chunk = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  const auto ranks = static_cast<std::size_t>(cluster->ranks());

  // This rank's workers' gradients (any values: the time does not depend on them).
  std::vector<std::vector<float>> grads(local, std::vector<float>(d));
  for (std::size_t w = 0; w < local; ++w) {
    for (std::size_t u = 0; u < d; ++u) grads[w][u] = 1e-3f * static_cast<float>((u + w) % 97);
  }
  // gather: sync's record, a 24-byte head then d + 1 floats (sync_sgd.h RecordBytes).
  const std::size_t record = 24 + 4 * (d + 1);
  std::vector<std::byte> mine(record * local), all(record * local * ranks);
  std::vector<float> sum(d);
  // ring
  corral::internal::SumRing ring(*cluster, d, chunk);
  ring.Bind();
  std::vector<float> totals(d);
  // mpi
  std::vector<float> own(d), reduced(d);

  auto gather = [&] {
    for (std::size_t w = 0; w < local; ++w) {
      std::memcpy(mine.data() + w * record + 24, grads[w].data(), 4 * d);
    }
    cluster->AllGather(mine, all);
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (std::size_t g = 0; g < local * ranks; ++g) {
      const auto* from = reinterpret_cast<const float*>(all.data() + g * record + 24);
      for (std::size_t u = 0; u < d; ++u) sum[u] += from[u];
    }
  };
  auto ring_sum = [&] {
    const bool done = ring.Run(totals, [&](std::size_t lo, std::span<float> part) {
      for (const std::vector<float>& g : grads) {
        for (std::size_t k = 0; k < part.size(); ++k) part[k] += g[lo + k];
      }
    });
    if (!done) std::abort();
  };
  auto mpi = [&] {
    std::fill(own.begin(), own.end(), 0.0f);
    for (const std::vector<float>& g : grads) {
      for (std::size_t u = 0; u < d; ++u) own[u] += g[u];
    }
    MPI_Allreduce(own.data(), reduced.data(), static_cast<int>(d), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };

  std::vector<double> times[3];
  for (int s = 0; s < steps + 3; ++s) {  // the first 3 warm up
    for (int m = 0; m < 3; ++m) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = Clock::now();
      if (m == 0) gather();
      if (m == 1) ring_sum();
      if (m == 2) mpi();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (s >= 3) times[m].push_back(ms);
    }
  }
  if (std::memcmp(sum.data(), totals.data(), 4 * d) != 0) {
    std::fprintf(stderr, "rank %d: the ring's totals differ from the gather's sum\n",
                 cluster->rank());
    return 1;
  }
  if (cluster->rank() == 0) {
    const double g = Median(times[0]), r = Median(times[1]), a = Median(times[2]);
    std::printf("d %zu ranks %zu workers per rank %zu steps %d chunk %zu\n", d, ranks, local,
                steps, chunk == 0 ? corral::internal::SumRing::DefaultChunk(d, cluster->ranks())
                                  : chunk);
    std::printf("gather ms %.4f\nring ms %.4f\nmpi ms %.4f\n", g, r, a);
    std::printf("ring/gather %.3f ring/mpi %.3f gather/mpi %.3f\n", r / g, r / a, g / a);
  }
  return 0;
}
