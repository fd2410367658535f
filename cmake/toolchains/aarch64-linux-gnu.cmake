# Cross-compiling for ARM64 Linux with Debian's g++-aarch64-linux-gnu and the arm64 multiarch libraries
# (scripts/cross-arm64.sh installs both). Built programs run under qemu-aarch64 (user mode), also when CTest runs them
# or gtest_discover_tests lists their tests. They load the multiarch libc6:arm64 from /lib/aarch64-linux-gnu: with
# `-L /usr/aarch64-linux-gnu` (the cross compiler's older libc) beside it, pthread_create hangs.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# The arm64 libraries and pkg-config files live beside the host's under /usr/lib/aarch64-linux-gnu.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
