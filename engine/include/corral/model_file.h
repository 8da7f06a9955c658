// Model files: a trained model saved with everything needed to rebuild and evaluate it.
//
// Layout: the 8-byte magic "CORRALM\n", a little-endian uint32 format version, a uint32
// header length, a JSON header (model kind and shape, training state), a uint64 parameter
// count, the float parameters, the float arrays of the mode's state (version 2: in the order
// the header's "training"."mode"."arrays" lists them with their lengths), and a uint64 FNV-1a
// checksum of every byte before it. Version 1 files (no mode state) still load. Files are written to a
// temporary name beside the target (O_EXCL, unpredictable), synced, and renamed, and the
// directory synced, so a crash or power loss leaves the old file or the new one under the real
// name, never a torn or missing one. Loading checks magic, version, sizes and checksum and throws
// corral::Error (kBadInput, naming the file) on any mismatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <corral/dataset.h>
#include <corral/kinds.h>
#include <corral/ratings_info.h>

namespace corral {

// What identifies a model besides its parameters.
struct ModelInfo {
  ModelKind kind = ModelKind::kLogistic;
  float l2 = 0;
  std::size_t num_features = 0;   // input dimension (linear, softmax, mlp)
  std::vector<float> classes;     // class labels (softmax, mlp)
  std::vector<int> hidden;        // mlp
  int rank = 0;                   // mf
  std::size_t users = 0;          // mf
  std::size_t items = 0;          // mf
  float mean = 0;                 // mf: the train set's mean rating
  std::vector<std::uint64_t> user_ids;  // mf: dense user id -> the id in the ratings file
  std::vector<std::uint64_t> item_ids;  // mf: dense item id -> the id in the ratings file
};

// What a mode keeps besides the model, as the mode describes it: its replicas, neighbour and
// public copies, estimates, residuals, round counters, random streams' positions (named float
// arrays and named counters). With it a resumed run continues bit for bit where the saved one
// stopped; without it (empty: modes whose model is their whole state, a run stopped inside an
// epoch that resumes at epoch boundaries, files from before it existed) a resumed run restarts
// from the parameters alone.
struct ModeState {
  std::map<std::string, std::vector<float>> arrays;
  std::map<std::string, std::uint64_t> counters;
  bool empty() const { return arrays.empty() && counters.empty(); }
};

// Where a training run stopped: what a checkpoint adds to a model, so that a resumed run
// continues the same schedule (step size, shuffles, stochastic rounding) from there.
struct TrainingState {
  Algorithm algorithm = Algorithm::kHogwild;
  int threads = 0;
  std::uint64_t seed = 0;
  float lr = 0;          // initial step size; epoch e runs at lr * lr_decay^e
  float lr_decay = 1;
  int batch = 1;
  // The gossip graph (--topology) of an algorithm that has one, "" for one that has none; the
  // compressor spec (ResolvedCompress). nullopt in files written before they were recorded.
  std::optional<std::string> topology;
  std::optional<std::string> compress;
  // --optimizer of the run (its accumulators or velocities are in `mode`); nullopt in files
  // written before it was recorded, which resume under sgd only.
  std::optional<Optimizer> optimizer;
  // The order its workers visited their rows in: "shuffled" (--shuffle epoch and index visit
  // the same permutations) or "storage" (--shuffle off). Files written before --shuffle existed
  // were shuffled.
  std::string order = "shuffled";
  int epochs_done = 0;   // complete epochs
  // Per worker: samples of epoch `epochs_done` already processed (empty at an epoch boundary).
  // Used when the resumed run has the same seed; otherwise that epoch restarts.
  std::vector<std::uint64_t> position;
  double train_s = 0;    // training time so far
  std::uint64_t samples = 0;
  ModeState mode;        // the mode's own state at `epochs_done`/`position` (may be empty)
};

struct SavedModel {
  ModelInfo info;
  std::vector<float> params;
  std::optional<TrainingState> training;  // present in files written from a training run
};

inline constexpr std::uint32_t kModelFileVersion = 2;

void SaveModel(const std::string& path, const SavedModel& model);
SavedModel LoadModel(const std::string& path);

// Loss and accuracy (classification) or RMSE (regression) of a model on a dataset.
struct Evaluation {
  std::size_t rows = 0;
  double loss = 0;       // mean data loss
  double objective = 0;  // loss + regulariser
  std::optional<double> accuracy;
  std::optional<double> rmse;
  std::optional<double> auc;  // logistic, hinge: area under the ROC curve (RocAuc)
};

Evaluation EvaluateModel(const SavedModel& model, const Dataset& data);

// For mf: the id mapping to load a ratings file with (LoadOptions::ratings_mapping), so its
// users and items get the dense ids the model was trained with; nullptr for other models.
std::shared_ptr<const RatingsInfo> RatingsMapping(const ModelInfo& info);

}  // namespace corral
