// corral.Dataset and the ways to get one: load() for every format the CLI reads, and views
// of the caller's NumPy arrays (no copy; python/corral/__init__.py converts dtypes first).
#include <corral/corral.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace corral::python {
namespace {

// Keeps the Python arrays a wrapped Dataset views alive. The last Dataset copy may be dropped
// on any thread (a worker's shard, the training thread), so releasing takes the GIL.
struct PyOwner {
  std::vector<py::object> arrays;
  ~PyOwner() {
    py::gil_scoped_acquire gil;
    arrays.clear();
  }
};

// `a` as a span of T: it must already have T's dtype, be C-contiguous and have `ndim`
// dimensions (the package converts; this guards the private entry points).
template <typename T>
std::span<const T> Span(const py::array& a, const char* what, int ndim = 1) {
  if (!a.dtype().is(py::dtype::of<T>()) || a.ndim() != ndim || !(a.flags() & py::array::c_style)) {
    throw py::value_error(std::string(what) + ": expected a C-contiguous " + std::to_string(ndim) +
                          "-d array of " + std::string(py::str(py::dtype::of<T>())));
  }
  return {static_cast<const T*>(a.data()), static_cast<std::size_t>(a.size())};
}

Dataset WrapCsr(const py::array& indptr, const py::array& indices, const py::array& data,
                const py::array& labels, std::size_t num_features, std::string name) {
  auto owner = std::make_shared<PyOwner>();
  owner->arrays = {indptr, indices, data, labels};
  const CsrView view{.row_ptr = Span<std::uint64_t>(indptr, "indptr"),
                     .index = Span<std::uint32_t>(indices, "indices"),
                     .value = Span<float>(data, "data"),
                     .label = Span<float>(labels, "y"),
                     .num_features = num_features};
  py::gil_scoped_release nogil;  // validation reads every index
  return Dataset::WrapSparse(view, std::move(owner), std::move(name));
}

Dataset WrapDense(const py::array& values, const py::array& labels, std::string name) {
  const std::span<const float> v = Span<float>(values, "X", 2);
  const auto features = static_cast<std::size_t>(values.shape(1));
  auto owner = std::make_shared<PyOwner>();
  owner->arrays = {values, labels};
  const std::span<const float> y = Span<float>(labels, "y");
  py::gil_scoped_release nogil;
  return Dataset::WrapDense(v, y, features, std::move(owner), std::move(name));
}

// `data` with the caller's sample weights, a float32 1-d array viewed in place (no copy; the
// package converts other dtypes once), checked by the library with its messages naming
// `sample_weight`.
Dataset WithWeights(const Dataset& data, const py::array& weights) {
  const std::span<const float> w = Span<float>(weights, "sample_weight");
  // The library reads an empty span as "no weights": refuse it here for a set with rows.
  if (w.empty() && data.rows() > 0) {
    throw py::value_error("sample_weight: has 0 weights for the " + std::to_string(data.rows()) +
                          " rows of " + data.name() + ", expected one weight per row");
  }
  auto owner = std::make_shared<PyOwner>();
  owner->arrays = {weights};
  py::gil_scoped_release nogil;  // validation reads every weight
  return data.WithWeights(w, std::move(owner), "sample_weight");
}

Dataset Ratings(const py::array& users, const py::array& items, const py::array& ratings,
                const Dataset* train, const SavedModel* model, const std::string& name) {
  std::shared_ptr<const RatingsInfo> mapping;
  if (train != nullptr) mapping = train->ratings_shared();
  if (model != nullptr) mapping = RatingsMapping(model->info);
  const auto u = Span<std::uint64_t>(users, "users");
  const auto i = Span<std::uint64_t>(items, "items");
  const auto r = Span<float>(ratings, "ratings");
  py::gil_scoped_release nogil;
  return RatingsFromArrays(u, i, r, mapping.get(), name);
}

Dataset Load(const std::string& path, const std::string& format, std::size_t features,
             const Dataset* train) {
  // As `corral train --data/--test --format --features`.
  CheckFeatureCount(features, ErrorCode::kBadConfig, "--features");
  LoadOptions load{.format = ParseDataFormat(format), .num_features = features};
  if (train != nullptr) {
    load.ratings_mapping = train->ratings_shared();
    if (train->ratings() == nullptr && features == 0) load.num_features = train->num_features();
  }
  py::gil_scoped_release nogil;
  return LoadDataset(path, load);
}

}  // namespace

void BindData(py::module_& m) {
  py::class_<Dataset>(m, "Dataset",
                      "An immutable labelled matrix (CSR or dense), as Corral trains on it.\n\n"
                      "Array properties are read-only NumPy views of Corral's own memory (or of "
                      "the arrays it wraps): no copy.")
      .def_property_readonly(
          "shape", [](const Dataset& d) { return py::make_tuple(d.rows(), d.num_features()); },
          "(rows, features)")
      .def_property_readonly("nnz", &Dataset::nnz, "Stored entries (rows x features when dense)")
      .def_property_readonly("name", &Dataset::name)
      .def_property_readonly("is_dense", &Dataset::is_dense)
      .def_property_readonly("is_ratings", [](const Dataset& d) { return d.ratings() != nullptr; })
      .def_property_readonly(
          "labels",
          [](py::object self) {
            const auto& d = self.cast<const Dataset&>();
            return ReadOnlyView(d.labels().data(), d.labels().size(), self);
          },
          "float32 labels, one per row")
      .def_property_readonly(
          "weights",
          [](py::object self) -> py::object {
            const auto& d = self.cast<const Dataset&>();
            if (!d.weighted()) return py::none();
            return ReadOnlyView(d.weights().data(), d.weights().size(), self);
          },
          "float32 sample weights, one per row (train(sample_weight=)); None when every row "
          "weighs 1")
      .def_property_readonly(
          "data",
          [](py::object self) {
            const auto& d = self.cast<const Dataset&>();
            py::array v = ReadOnlyView(d.value().data(), d.value().size(), self);
            if (d.is_dense()) {
              return v.attr("reshape")(d.rows(), d.num_features()).cast<py::array>();
            }
            return v;
          },
          "float32 values: CSR's data, or the rows x features matrix of a dense set")
      .def_property_readonly(
          "indices",
          [](py::object self) -> py::object {
            const auto& d = self.cast<const Dataset&>();
            if (d.is_dense()) return py::none();
            return ReadOnlyView(d.index().data(), d.index().size(), self);
          },
          "uint32 column of every stored value (CSR); None for a dense set")
      .def_property_readonly(
          "indptr",
          [](py::object self) -> py::object {
            const auto& d = self.cast<const Dataset&>();
            if (d.is_dense()) return py::none();
            return ReadOnlyView(d.row_ptr().data(), d.row_ptr().size(), self);
          },
          "uint64 rows + 1 offsets into data (CSR); None for a dense set")
      .def("__repr__", [](const Dataset& d) {
        return "<corral.Dataset " + d.name() + ": " + std::to_string(d.rows()) + " rows, " +
               std::to_string(d.num_features()) + " features, " + std::to_string(d.nnz()) +
               (d.is_dense() ? " values (dense)>" : " non-zeros>");
      });

  m.def("_load", &Load, py::arg("path"), py::arg("format") = "auto", py::arg("features") = 0,
        py::arg("train") = nullptr);
  m.def("_wrap_csr", &WrapCsr, py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("labels"), py::arg("num_features"), py::arg("name"));
  m.def("_wrap_dense", &WrapDense, py::arg("values"), py::arg("labels"), py::arg("name"));
  m.def("_with_weights", &WithWeights, py::arg("data"), py::arg("weights"));
  m.def("_ratings", &Ratings, py::arg("users"), py::arg("items"), py::arg("ratings"),
        py::arg("train") = nullptr, py::arg("model") = nullptr, py::arg("name") = "ratings");
}

}  // namespace corral::python
