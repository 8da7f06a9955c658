// The processes one training run spans: `mpirun -np R corral train` runs R ranks, each with
// --threads workers, as one run of R x threads workers (docs/algorithms.md, "Across processes").
//
// An embedding program that trains across processes passes a Cluster to Train (train.h). This
// header is free of mpi.h: the MPI implementation lives in the build's internal library
// corral_mpi (CORRAL_MPI); a program without MPI never needs one (Train's default is this
// process alone).
//
// What the engine asks of the ranks is small: gather equal-sized blocks from every rank in rank
// order (sums are then formed in one fixed order on every rank, so their bits do not depend on
// how the ranks are laid out), broadcast from rank 0, a barrier, and the transport that carries
// the replica modes' messages between workers on different ranks.
//
// Thread safety: the engine calls a Cluster from one thread at a time (the thread that called
// Train, or one worker while the others wait at a barrier); every rank makes the same calls in
// the same order, as MPI's collectives require.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

namespace corral {
namespace internal {
class Transport;             // engine/src/channel/transport.h
struct ShmTransportConfig;   // engine/src/channel/shm_transport.h
}  // namespace internal

class Cluster {
 public:
  virtual ~Cluster() = default;

  // This process's rank, 0..ranks()-1.
  virtual int rank() const = 0;
  virtual int ranks() const = 0;

  // Collective: every rank gives `mine` (the same size on all ranks); `all` (ranks() times that
  // size) receives every rank's block in rank order.
  virtual void AllGather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  // Collective: rank 0's `bytes` overwrite every other rank's (the same size on all ranks).
  virtual void Broadcast(std::span<std::byte> bytes) = 0;
  virtual void Barrier() = 0;

  // Internal (the engine calls it): collective, the transport of a replica mode whose workers
  // (config.workers of them, global ids) live on the ranks `rank_of_worker` names.
  virtual std::unique_ptr<internal::Transport> MakeTransport(
      const internal::ShmTransportConfig& config, std::span<const int> rank_of_worker) = 0;
};

}  // namespace corral
