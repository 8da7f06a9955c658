# corral_target_options(target): warnings, sanitizers and -march=native for Corral's own
# targets only; nothing here touches global flags or third-party targets.

set(_corral_sanitizers "")
if(CORRAL_SANITIZE)
  string(REPLACE "," ";" _corral_sanitizers "${CORRAL_SANITIZE}")
  foreach(_s IN LISTS _corral_sanitizers)
    if(NOT _s MATCHES "^(address|thread|undefined)$")
      message(FATAL_ERROR "CORRAL_SANITIZE: unknown sanitizer '${_s}' (address, thread, undefined)")
    endif()
  endforeach()
  if("thread" IN_LIST _corral_sanitizers AND "address" IN_LIST _corral_sanitizers)
    message(FATAL_ERROR "CORRAL_SANITIZE: thread and address cannot be combined")
  endif()
  list(JOIN _corral_sanitizers "," _corral_sanitize_joined)
  # The sanitizers' reports need line tables and function names: -g1 gives them, unless the
  # build's own flags ask for full debug information (-g). Full -g makes an instrumented build
  # about a quarter slower to compile (modes/hogwild.cc under address,undefined -O1: 125 s vs
  # 91 s) and its objects twice the size.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" _corral_build_type)
  set(_corral_sanitize_debug -g1)
  if(" ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_corral_build_type}} " MATCHES " -g")
    set(_corral_sanitize_debug "")
  endif()
endif()

function(corral_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion
                                           # designated initializers leave the rest defaulted on purpose
                                           -Wno-missing-field-initializers)
  if(CORRAL_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  if(_corral_sanitizers)
    target_compile_options(${target} PRIVATE -fsanitize=${_corral_sanitize_joined}
                                             -fno-omit-frame-pointer ${_corral_sanitize_debug})
    target_link_options(${target} PRIVATE -fsanitize=${_corral_sanitize_joined})
    if("undefined" IN_LIST _corral_sanitizers)
      target_compile_options(${target} PRIVATE -fno-sanitize-recover=undefined)
    endif()
  endif()
endfunction()
