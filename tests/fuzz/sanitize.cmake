# Included by the top-level CMakeLists.txt when ECD_FUZZ is ON, before any target is defined, so
# that every library a fuzz target links (lib/, daemon/, proto/) is built the same way:
# - ASan and UBSan, every UBSan finding fatal, so libFuzzer reports it as a crash;
# - fuzzer-no-link: libFuzzer's coverage instrumentation without its main(), so the fuzzer is
#   guided by the code under test and not only by the fuzz target's own file.
# tests/fuzz/CMakeLists.txt links the fuzz targets themselves with -fsanitize=fuzzer.
# Prebuilt system libraries (abseil, protobuf, gRPC, SQLite) stay uninstrumented.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "ECD_FUZZ=ON needs clang for C and C++ (libFuzzer), but CMAKE_C_COMPILER is "
    "${CMAKE_C_COMPILER_ID} and CMAKE_CXX_COMPILER is ${CMAKE_CXX_COMPILER_ID}. Configure a "
    "fresh build dir with CC=clang CXX=clang++ (scripts/fuzz.sh does), after "
    "`apt-get install clang-14 libclang-rt-14-dev`.")
endif()
set(ECD_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
  -fno-omit-frame-pointer)
add_compile_options(${ECD_SANITIZE_FLAGS} -fsanitize=fuzzer-no-link)
add_link_options(-fsanitize=address,undefined)
