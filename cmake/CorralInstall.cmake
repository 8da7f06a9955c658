# Installing Corral as a relocatable CMake package:
#   cmake --install build --prefix /some/prefix
#   find_package(Corral CONFIG REQUIRED)    # with CMAKE_PREFIX_PATH=/some/prefix
#   target_link_libraries(app PRIVATE corral::corral)
#   target_link_libraries(app PRIVATE corral::mpi)  # built with CORRAL_MPI: <corral/mpi_cluster.h>
# Public headers are the <corral/...> headers of data/, models/, topologies/ and engine/ (none
# includes oneTBB, Boost, Eigen, hwloc or nlohmann-json). The library is static by default, so
# its compiled private dependencies (oneTBB, hwloc, zlib) are found again by CorralConfig.cmake
# for the final link; the header-only ones (Eigen, Boost, nlohmann-json) are not needed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

target_include_directories(corral PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(corral PROPERTIES EXPORT_NAME corral)

set(_corral_installed corral)
if(CORRAL_MPI)
  list(APPEND _corral_installed corral_mpi)  # corral::mpi, which finds MPI again (config file)
  set(_corral_no_mpi_header)
else()
  set(_corral_no_mpi_header PATTERN mpi_cluster.h EXCLUDE)  # nothing to link it against
endif()
install(TARGETS ${_corral_installed} EXPORT CorralTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS corral_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_part data models topologies engine)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_part}/include/corral
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
          ${_corral_no_mpi_header})
endforeach()

set(CORRAL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Corral)
install(EXPORT CorralTargets NAMESPACE corral:: DESTINATION ${CORRAL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/CorralConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/CorralConfig.cmake
                              INSTALL_DESTINATION ${CORRAL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/CorralConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/CorralConfig.cmake ${PROJECT_BINARY_DIR}/CorralConfigVersion.cmake
        DESTINATION ${CORRAL_CMAKE_DIR})
