// corral._corral: Python bindings over Corral's public API (<corral/corral.h>). The package
// python/corral wraps it in NumPy/SciPy conversions and scikit-learn estimators.
//
// Errors: a corral::Error the user caused (bad input, configuration, an unreadable file)
// becomes ValueError, any other (divergence, a worker's failure) RuntimeError; the message is
// the one the CLI prints, unchanged.
#include <corral/error.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace py = pybind11;

namespace corral::python {

template <typename T>
py::array ReadOnlyView(const T* data, std::size_t count, py::handle base) {
  py::array view(py::dtype::of<T>(), {static_cast<py::ssize_t>(count)}, {}, data, base);
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}
template py::array ReadOnlyView(const float*, std::size_t, py::handle);
template py::array ReadOnlyView(const std::uint32_t*, std::size_t, py::handle);
template py::array ReadOnlyView(const std::uint64_t*, std::size_t, py::handle);

}  // namespace corral::python

PYBIND11_MODULE(_corral, m) {
  m.doc() = "Corral's compiled core: datasets, training, models (use the corral package).";
  m.attr("__version__") = CORRAL_VERSION;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const corral::Error& e) {
      if (e.IsUsageError()) {
        PyErr_SetString(PyExc_ValueError, e.what());
      } else {
        PyErr_SetString(PyExc_RuntimeError, e.what());
      }
    }
  });
  corral::python::BindData(m);
  corral::python::BindTraining(m);
}
