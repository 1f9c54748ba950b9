# riscv64 Linux cross toolchain: clang-19 for rv64gcv (RVV 1.0), lld, the
# headers and libraries of Debian's gcc-riscv64-linux-gnu and
# libc6-dev-riscv64-cross (found through --gcc-toolchain=/usr, which also
# gives crtbeginT.o and libgcc for static links), static executables that
# qemu-riscv64 runs without a target root.
#
#   cmake -S . -B build-rv64 -DCMAKE_TOOLCHAIN_FILE=cmake/riscv64-clang.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)

set(MPLAN_RV64_CLANG clang-19 CACHE STRING "clang for the riscv64 build")
set(CMAKE_C_COMPILER ${MPLAN_RV64_CLANG})
set(CMAKE_C_COMPILER_TARGET riscv64-linux-gnu)
set(MPLAN_RV64_FLAGS "-march=rv64gcv -mabi=lp64d --gcc-toolchain=/usr")
set(CMAKE_C_FLAGS_INIT "${MPLAN_RV64_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${MPLAN_RV64_FLAGS} -fuse-ld=lld -static")

# Libraries and headers come from the cross sysroot only.
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
