# `cmake --build build --target docs`: the API reference of the public headers (HTML in
# build/docs/html/index.html), with docs/embedding.md as its front page. Only when Doxygen is
# installed (Debian package `doxygen`, in .ci/setup); the build never needs it.
#
# Most public headers document their API with plain `//` comments (the style of the code
# base); the input filter reads them as Doxygen comments (`///`, and `///<` after a member),
# so every header documents itself in one style without Doxygen markup everywhere.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  return()
endif()
set(DOXYGEN_PROJECT_NAME "Corral")
set(DOXYGEN_PROJECT_BRIEF "Lock-free asynchronous and decentralized SGD: the embedding API")
set(DOXYGEN_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/docs)
set(DOXYGEN_EXTRACT_ALL YES)
set(DOXYGEN_EXCLUDE_SYMBOLS "corral::detail::*;corral::internal::*;detail;internal")
set(DOXYGEN_STRIP_FROM_INC_PATH ${PROJECT_SOURCE_DIR}/data/include ${PROJECT_SOURCE_DIR}/models/include
    ${PROJECT_SOURCE_DIR}/topologies/include ${PROJECT_SOURCE_DIR}/engine/include)
set(DOXYGEN_FULL_PATH_NAMES YES)
set(DOXYGEN_USE_MDFILE_AS_MAINPAGE ${PROJECT_SOURCE_DIR}/docs/embedding.md)
set(DOXYGEN_WARN_IF_UNDOCUMENTED NO)
set(DOXYGEN_QUIET YES)
set(DOXYGEN_INPUT_FILTER
    "sed -e 's|^\\([[:space:]]*\\)// |\\1/// |' -e 's|\\([;,]\\)\\([[:space:]]*\\)// |\\1\\2///< |'")
set(DOXYGEN_FILTER_SOURCE_FILES NO)
doxygen_add_docs(docs
  ${PROJECT_SOURCE_DIR}/docs/embedding.md
  ${PROJECT_SOURCE_DIR}/data/include/corral
  ${PROJECT_SOURCE_DIR}/models/include/corral
  ${PROJECT_SOURCE_DIR}/topologies/include/corral
  ${PROJECT_SOURCE_DIR}/engine/include/corral
  COMMENT "API reference of the public headers: ${PROJECT_BINARY_DIR}/docs/html/index.html")
