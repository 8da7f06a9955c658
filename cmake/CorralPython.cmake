# CORRAL_PYTHON: the `corral` Python package (python/): the compiled `corral._corral`
# (pybind11, over the public API only) and the pure-Python estimators around it.
#
# On by default when pybind11 and the Python headers are found, off (with a message) when not,
# and always off for sanitizer builds (the interpreter is not instrumented). The interpreter is
# Debian's /usr/bin/python3 unless Python3_EXECUTABLE says otherwise: NumPy, SciPy and
# scikit-learn come from Debian packages (.ci/setup) installed for that interpreter, whatever
# other python3 is first on PATH.
#
# The package is assembled in build/python/corral (so PYTHONPATH=build/python imports it;
# the tests do) and installed by `cmake --install build --component python`, into
# CORRAL_PYTHON_INSTALL_DIR under the prefix (README, "Python").
set(_corral_python_default OFF)
if(CORRAL_SANITIZE STREQUAL "")
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The interpreter of the corral module")
  endif()
  find_package(Python3 3.8 COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND)
    set(PYBIND11_FINDPYTHON ON)
    find_package(pybind11 2.6 CONFIG QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(_corral_python_default ON)
  else()
    message(STATUS "Corral: the Python module is off: pybind11 (pybind11-dev) or the Python "
                   "headers (python3-dev) were not found")
  endif()
endif()
option(CORRAL_PYTHON "Build the corral Python module (needs pybind11-dev, python3-dev)"
       ${_corral_python_default})
if(CORRAL_PYTHON AND NOT CORRAL_SANITIZE STREQUAL "")
  message(STATUS "Corral: the Python module is off in sanitizer builds (the interpreter is not instrumented)")
  set(CORRAL_PYTHON OFF CACHE BOOL "Build the corral Python module (needs pybind11-dev, python3-dev)" FORCE)
endif()
if(CORRAL_PYTHON)
  if(NOT pybind11_FOUND)
    find_package(Python3 3.8 REQUIRED COMPONENTS Interpreter Development.Module)
    set(PYBIND11_FINDPYTHON ON)
    find_package(pybind11 2.6 CONFIG REQUIRED)
  endif()
  # The extension module is a shared object: the static library it links must be PIC.
  set_target_properties(corral PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(CORRAL_PYTHON_INSTALL_DIR
      "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages" CACHE STRING
      "Where `cmake --install build --component python` puts the corral package, under the prefix (default: the user site of --prefix ~/.local)")
  add_subdirectory(python)
endif()
