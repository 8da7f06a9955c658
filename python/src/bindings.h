// The pieces of the `corral._corral` extension module, each registered by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace corral::python {

// corral.Dataset, load(), the array wrappers (data.cc).
void BindData(pybind11::module_& m);
// corral.Model, TrainResult, LiveModel, train() (training.cc).
void BindTraining(pybind11::module_& m);

// A read-only NumPy view of `count` values at `data`, kept alive by `base`.
template <typename T>
pybind11::array ReadOnlyView(const T* data, std::size_t count, pybind11::handle base);

}  // namespace corral::python
