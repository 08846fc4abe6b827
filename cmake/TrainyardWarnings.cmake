# Warnings live in one INTERFACE target that every Trainyard target links.
add_library(ty_warnings INTERFACE)
target_compile_options(ty_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports std::variant members (Result<T>) as maybe-uninitialized at -O2: false positives.
  target_compile_options(ty_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
if(TRAINYARD_WERROR)
  target_compile_options(ty_warnings INTERFACE -Werror)
endif()
# ThreadSanitizer (the tsan preset). Not together with TRAINYARD_SANITIZE: TSan and ASan
# cannot share a binary.
option(TRAINYARD_TSAN "Build with ThreadSanitizer" OFF)
if(TRAINYARD_TSAN AND TRAINYARD_SANITIZE)
  message(FATAL_ERROR "TRAINYARD_TSAN and TRAINYARD_SANITIZE cannot be combined")
endif()
if(TRAINYARD_TSAN)
  target_compile_options(ty_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(ty_warnings INTERFACE -fsanitize=thread)
endif()
if(TRAINYARD_SANITIZE)
  target_compile_options(ty_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(ty_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(TRAINYARD_FUZZ)
  # Every library is instrumented for coverage and checked; fuzz/ links libFuzzer's main.
  target_compile_options(ty_warnings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                                               -fno-sanitize-recover=undefined
                                               -fno-omit-frame-pointer)
  target_link_options(ty_warnings INTERFACE -fsanitize=address,undefined)
endif()
