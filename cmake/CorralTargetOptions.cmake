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
                                             -fno-omit-frame-pointer -g)
    target_link_options(${target} PRIVATE -fsanitize=${_corral_sanitize_joined})
    if("undefined" IN_LIST _corral_sanitizers)
      target_compile_options(${target} PRIVATE -fno-sanitize-recover=undefined)
    endif()
  endif()
endfunction()
