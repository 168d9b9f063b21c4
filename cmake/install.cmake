# `cmake --install`: libweft, its public headers, the CMake package (weft::weft) and weft.pc.
#
# What a consumer gets, and the invariants kept here:
#  - <prefix>/lib/libweft.so (shared by default) and <prefix>/include/weft/*.h, including the
#    generated version.h. The `weft` program goes to <prefix>/bin (cli/CMakeLists.txt installs it);
#    the viewer's static library, the benchmarks and the tests are not installed.
#  - lib/cmake/weft/{weftConfig,weftConfigVersion,weftTargets}.cmake: find_package(weft) gives the
#    imported target weft::weft with its include directory. Its interface links Threads only: the
#    CUDA runtime, cJSON and libm are private to a shared libweft, so a consumer needs neither nvcc
#    nor the CUDA toolkit nor libcjson-dev to compile and link against it. A static libweft carries
#    them as link-only dependencies, and weftConfig.cmake then finds them (CUDAToolkit, libcjson).
#  - lib/pkgconfig/weft.pc finds its prefix relative to itself (${pcfiledir}), so an install tree
#    that is moved, or installed with --prefix, stays right. Requires.private/Libs.private only
#    name what a static link needs.
# Nothing here adds sources or changes how the library is built.
include(CMakePackageConfigHelpers)

set(WEFT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
# An installed libweft.so with the CUDA backend carries the CUDA runtime's directory as its
# RUNPATH, so programs linking it find libcudart at link and run time without naming it, also
# where the toolkit's directory is not in the loader's configuration (a toolkit unpacked by hand).
# Where the directory does not exist, the loader falls back to its usual search.
if(WEFT_HAVE_CUDA AND CUDAToolkit_LIBRARY_DIR)
  set_property(TARGET weft APPEND PROPERTY INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
endif()

install(TARGETS weft EXPORT weftTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/weft/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/weft)

# ---- CMake package ------------------------------------------------------------------------------
# Values weftConfig.cmake.in needs: whether the installed library is static (then its private
# dependencies must be found by the consumer too) and whether it has the CUDA backend.
if(BUILD_SHARED_LIBS)
  set(WEFT_INSTALL_STATIC OFF)
else()
  set(WEFT_INSTALL_STATIC ON)
endif()
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${WEFT_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weftConfig.cmake
  INSTALL_DESTINATION ${WEFT_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/weftConfig.cmake ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
  DESTINATION ${WEFT_CMAKE_INSTALL_DIR})

# ---- pkg-config ---------------------------------------------------------------------------------
# prefix = ${pcfiledir}/<the way up from lib/pkgconfig>, e.g. "../..".
file(RELATIVE_PATH WEFT_PC_UP "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r")
set(WEFT_PC_CFLAGS "")
set(WEFT_PC_REQUIRES_PRIVATE "")
set(WEFT_PC_LIBS_PRIVATE "-lpthread -lm")
if(NOT BUILD_SHARED_LIBS)
  set(WEFT_PC_CFLAGS " -DWEFT_STATIC")
  set(WEFT_PC_REQUIRES_PRIVATE "libcjson")
  if(WEFT_HAVE_CUDA)
    set(WEFT_PC_LIBS_PRIVATE "-L${CUDAToolkit_LIBRARY_DIR} -lcudart ${WEFT_PC_LIBS_PRIVATE} -lstdc++")
  endif()
  if(WEFT_HAVE_MPI) # Open MPI and MPICH install ompi-c.pc / mpich.pc; the link flags are portable
    string(REPLACE ";" " " weft_mpi_libs "${MPI_C_LIBRARIES}")
    set(WEFT_PC_LIBS_PRIVATE "${weft_mpi_libs} ${WEFT_PC_LIBS_PRIVATE}")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/weft.pc.in ${PROJECT_BINARY_DIR}/weft.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/weft.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
