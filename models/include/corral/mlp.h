// corral::MlpModel: a multilayer perceptron on dense input: hidden layers with ReLU, a softmax
// output over K classes, cross-entropy loss. The non-convex workload (DESIGN.md §6).
//
// Parameters, one flat buffer, layer after layer (inputs -> hidden[0] -> ... -> K):
//   for each layer with `in` inputs and `out` outputs:  W [out x in] row-major, then b [out].
// So NumParams() = sum over layers of out * (in + 1); layer l's W starts at LayerOffset(l).
//
// Objective: mean cross-entropy (each sample's times its weight, Dataset::Weight) + (l2/2)|w|^2 over *every* parameter, biases included. Dense
// models report one L2 weight (DenseGrad::l2) that the engine's step applies to all
// coordinates; at the small l2 an MLP uses (1/n by default) the bias decay is harmless.
//
// A label the training set never had (ClassMap::Id == -1, only possible in a test set or a
// model built from another set) is always counted as misclassified; its loss is the
// cross-entropy against the uniform distribution over the K known classes,
// log(sum_c exp z_c) - mean_c z_c >= log K: never below the loss of a uniform guess, finite,
// and smooth, so Gradient (target 1/K per class) stays the exact derivative of the loss.
//
// Input: rows are gathered into a dense batch matrix; a dense dataset's rows are copied whole
// (DenseRow), sparse rows are scattered. Features beyond inputs() are ignored, missing ones
// are 0 (a test set may be narrower or wider than the train set).
//
// Kernels: Eigen products over column-major activation blocks ([width x batch]), tiled so that
// Eigen's packing buffers stay on the stack: a Gradient step never touches the heap.
//
// Thread safety: immutable after construction; any number of workers may call it at once,
// each with its own Workspace and DenseGrad (owner-only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <corral/class_map.h>
#include <corral/dataset.h>
#include <corral/dense_grad.h>
#include <corral/model.h>
#include <corral/params.h>
#include <corral/rng.h>
#include <corral/training_facts.h>

namespace corral {

class MlpModel {
 public:
  static constexpr Task kTask = Task::kMulticlass;
  static constexpr std::string_view kName = "mlp";
  // Not convex: the step-size search keeps its best step instead of halving it. Measured on
  // Fashion-MNIST (hidden 256,128, batch 16, 2 threads, 10 epochs): the halved pick 2^-5 ended
  // at 0.878 test accuracy, steps 0.05-0.1 at 0.882.
  static constexpr bool kConvex = false;
  using Grad = DenseGrad;

  // Per-worker scratch space for batches of up to `batch` rows, sized by MakeWorkspace.
  // Thread safety: owner-only.
  struct Workspace {
    std::size_t batch = 0;
    std::vector<float> weights;      // the worker's snapshot of the shared parameters
    std::vector<float> input;        // [inputs x batch], column per row
    std::vector<float> activations;  // per layer [out x batch]: ReLU outputs, then softmax
    std::vector<float> delta;        // two [max width x batch] buffers for back-propagation
  };

  // For training: inputs = train.num_features(), classes = the labels of `train`.
  // Throws corral::Error (kBadConfig) for an empty or non-positive hidden width or a negative
  // l2, (kBadInput) for fewer than 2 classes.
  MlpModel(const Dataset& train, std::vector<int> hidden, float l2);
  // The same from the whole set's facts (a run whose ranks hold parts of the set).
  MlpModel(const TrainingFacts& train, std::vector<int> hidden, float l2);
  // For a saved model: the shape and classes it was trained with.
  MlpModel(std::size_t inputs, std::vector<int> hidden, ClassMap classes, float l2);

  std::size_t NumParams() const { return num_params_; }
  std::size_t inputs() const { return inputs_; }
  const std::vector<int>& hidden() const { return hidden_; }
  const ClassMap& classes() const { return classes_; }
  float l2() const { return l2_; }

  // Layers (hidden.size() + 1 of them): layer l maps Width(l) to Width(l + 1) values.
  std::size_t NumLayers() const { return hidden_.size() + 1; }
  std::size_t Width(std::size_t l) const { return widths_[l]; }
  // Where layer l's W begins in the flat buffer (its b follows W).
  std::size_t LayerOffset(std::size_t l) const { return offsets_[l]; }

  DenseGrad MakeGrad(const Dataset& /*data*/, std::size_t /*batch*/) const {
    DenseGrad g(num_params_);
    g.l2 = l2_;
    return g;
  }
  Workspace MakeWorkspace(std::size_t batch) const;

  // He-uniform U(+-sqrt(6/in)) for the ReLU layers, Glorot-uniform U(+-sqrt(6/(in+out))) for
  // the output layer, biases 0. Deterministic for the state of `rng`.
  void Init(std::span<float> w, Rng& rng) const;

  // Mean cross-entropy gradient over `rows` at w (read once into ws.weights with relaxed
  // loads), into g.grad; g.l2 = l2(). \pre rows.size() <= ws.batch, ws from MakeWorkspace.
  void Gradient(Params w, const Dataset& data, std::span<const std::uint32_t> rows,
                DenseGrad& g, Workspace& ws) const;

  // Cross-entropy sum and correct count over rows [begin, end); forward passes in chunks,
  // with buffers of its own (safe to call from many threads at once).
  EvalSums Evaluate(std::span<const float> w, const Dataset& data, std::size_t begin,
                    std::size_t end) const;

  // (l2/2)|w|^2 over every parameter.
  double Regularizer(std::span<const float> w) const;

  // The most probable class's label.
  float Predict(std::span<const float> w, SparseRow x) const;
  // Every class's probability, in classes() order. \pre p.size() == classes().size()
  void Probabilities(std::span<const float> w, SparseRow x, std::span<float> p) const;

 private:
  std::size_t inputs_;
  std::vector<int> hidden_;
  ClassMap classes_;
  float l2_;
  std::vector<std::size_t> widths_;   // inputs, hidden..., K
  std::vector<std::size_t> offsets_;  // per layer, start of W
  std::size_t num_params_ = 0;
  std::size_t max_width_ = 0;         // widest layer output (hidden or K)
  std::size_t activation_rows_ = 0;   // sum of layer output widths
};

}  // namespace corral
