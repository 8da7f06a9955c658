# Runs the corral binary (CLI) with ARGS ('|'-separated) and checks its exit status (EXPECT_RC) and that its
# output contains EXPECT_OUT.
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${CLI} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}\nstdout: ${out}\nstderr: ${err}")
endif()
string(FIND "${out}${err}" "${EXPECT_OUT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "output lacks '${EXPECT_OUT}'\nstdout: ${out}\nstderr: ${err}")
endif()
