# CORRAL_MPI: the MPI transport (engine/src/channel/mpi_transport.*) that carries the replica
# modes' messages between processes and the Cluster of mpirun's ranks
# (engine/src/cluster/mpi_cluster.*), built as the internal library `corral_mpi`; the CLI links
# it and trains across ranks under mpirun. The installed `corral` library and its public headers
# never see mpi.h; `corral_mpi` is installed beside it as `corral::mpi`, with <corral/mpi_cluster.h>
# (MakeMpiCluster over an embedding program's communicator), for programs that use MPI.
#
# On by default when an MPI for C++ is found (Debian: libopenmpi-dev openmpi-bin), off (with a
# message) when not, and always off for sanitizer builds: Open MPI is not instrumented, and its
# own allocations and threads drown ASan's and TSan's reports.
set(_corral_mpi_default OFF)
if(CORRAL_SANITIZE STREQUAL "")
  set(MPI_CXX_SKIP_MPICXX ON)  # the C API only, not the deprecated C++ bindings
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(_corral_mpi_default ON)
  else()
    message(STATUS "Corral: MPI is off: no MPI for C++ was found (Debian: libopenmpi-dev openmpi-bin)")
  endif()
endif()
option(CORRAL_MPI "Build the MPI transport (needs libopenmpi-dev, openmpi-bin)" ${_corral_mpi_default})
if(CORRAL_MPI AND NOT CORRAL_SANITIZE STREQUAL "")
  message(STATUS "Corral: MPI is off in sanitizer builds (Open MPI is not instrumented)")
  set(CORRAL_MPI OFF CACHE BOOL "Build the MPI transport (needs libopenmpi-dev, openmpi-bin)" FORCE)
endif()
if(CORRAL_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI REQUIRED COMPONENTS CXX)
  add_library(corral_mpi STATIC ${PROJECT_SOURCE_DIR}/engine/src/channel/mpi_transport.cc
                         ${PROJECT_SOURCE_DIR}/engine/src/cluster/mpi_cluster.cc
                         ${PROJECT_SOURCE_DIR}/engine/src/cluster/rank_data.cc)
  add_library(corral::mpi ALIAS corral_mpi)
  set_target_properties(corral_mpi PROPERTIES EXPORT_NAME mpi)
  target_include_directories(corral_mpi PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(corral_mpi PUBLIC corral MPI::MPI_CXX PRIVATE $<BUILD_INTERFACE:Boost::headers>)
  corral_target_options(corral_mpi)
endif()
# The CLI trains across ranks when started by mpirun (engine/cli/train_command.cc).
if(CORRAL_MPI)
  target_link_libraries(corral_cli PRIVATE corral_mpi)
  target_include_directories(corral_cli PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(corral_cli PRIVATE CORRAL_HAVE_MPI=1)
endif()
