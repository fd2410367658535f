# Sourced by scripts/test.sh and scripts/fuzz-long.sh: the CMake options of the clang sanitizer builds (ASan + UBSan
# with the libFuzzer targets, and ThreadSanitizer). Line tables are all a sanitizer report needs, and they compile much
# faster than full debug info. Unity batches, as in scripts/setup.sh.
sanitizer_cmake_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo
                       "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG"
                       "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG"
                       -DCAI_BENCH=OFF -DCAI_GPU_PLUGINS=OFF -DCMAKE_UNITY_BUILD=ON)
