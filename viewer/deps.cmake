# Finds what the viewer needs, before the top level declares WEFT_VIEWER (whose default is ON only
# when all of it is there). Sets WEFT_VIEWER_DEPS_FOUND, WEFT_STB_INCLUDE_DIR and, when something is
# missing, WEFT_VIEWER_DEPS_MISSING (what to install); when everything is there, the interface
# target weft_viewer_gl carries the include directories and libraries of epoxy, glfw3, egl and cglm.
#
# Each library is taken from pkg-config when its module resolves, else found directly (find_path /
# find_library, which search CMAKE_PREFIX_PATH and, here, the directories of CPATH and
# LIBRARY_PATH). The direct search matters where the packages are unpacked under a prefix without
# their whole dependency chain: epoxy.pc requires x11.pc (libx11-dev), which such a prefix may not
# hold although libepoxy itself is there; and a machine may have no pkg-config at all.
set(WEFT_VIEWER_DEPS_FOUND OFF)
set(WEFT_VIEWER_DEPS_MISSING "")
find_package(PkgConfig QUIET)

# Extra search directories from the compiler's environment (colon-separated lists), plus the
# usr/ layout of a prefix that holds an unpacked Debian tree (<prefix>/usr/include, ...).
set(_weft_inc_hints "")
set(_weft_lib_hints "")
foreach(_d IN ITEMS $ENV{CPATH} $ENV{C_INCLUDE_PATH})
  string(REPLACE ":" ";" _d "${_d}")
  list(APPEND _weft_inc_hints ${_d})
endforeach()
foreach(_d IN ITEMS $ENV{LIBRARY_PATH})
  string(REPLACE ":" ";" _d "${_d}")
  list(APPEND _weft_lib_hints ${_d})
endforeach()
set(_weft_lib_suffixes lib lib64 usr/lib usr/lib64)
if(CMAKE_LIBRARY_ARCHITECTURE)
  list(APPEND _weft_lib_suffixes lib/${CMAKE_LIBRARY_ARCHITECTURE}
       usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
endif()

# _weft_viewer_dep(<pkg-config module> <header> <library names...>): appends the module's target or
# found paths to _weft_gl_libs / _weft_gl_incs, or the module to WEFT_VIEWER_DEPS_MISSING.
macro(_weft_viewer_dep mod header)
  set(_weft_found OFF)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(WEFT_PC_${mod} QUIET IMPORTED_TARGET GLOBAL ${mod})
    if(WEFT_PC_${mod}_FOUND)
      list(APPEND _weft_gl_libs PkgConfig::WEFT_PC_${mod})
      set(_weft_found ON)
    endif()
  endif()
  if(NOT _weft_found)
    find_path(WEFT_${mod}_INCLUDE_DIR ${header} HINTS ${_weft_inc_hints}
              PATH_SUFFIXES include usr/include)
    find_library(WEFT_${mod}_LIBRARY NAMES ${ARGN} HINTS ${_weft_lib_hints}
                 PATH_SUFFIXES ${_weft_lib_suffixes})
    if(WEFT_${mod}_INCLUDE_DIR AND WEFT_${mod}_LIBRARY)
      list(APPEND _weft_gl_incs ${WEFT_${mod}_INCLUDE_DIR})
      list(APPEND _weft_gl_libs ${WEFT_${mod}_LIBRARY})
      set(_weft_found ON)
      message(STATUS "weft: ${mod}: ${WEFT_${mod}_LIBRARY} (found directly, not through pkg-config)")
    else()
      list(APPEND WEFT_VIEWER_DEPS_MISSING "${mod}")
    endif()
  endif()
endmacro()

set(_weft_gl_libs "")
set(_weft_gl_incs "")
_weft_viewer_dep(epoxy epoxy/gl.h epoxy)
_weft_viewer_dep(glfw3 GLFW/glfw3.h glfw glfw3)
_weft_viewer_dep(egl EGL/egl.h EGL)
_weft_viewer_dep(cglm cglm/cglm.h cglm)
find_path(WEFT_STB_INCLUDE_DIR stb/stb_image_write.h HINTS ${_weft_inc_hints}
          PATHS /usr/include /usr/local/include PATH_SUFFIXES include usr/include)
if(NOT WEFT_STB_INCLUDE_DIR)
  list(APPEND WEFT_VIEWER_DEPS_MISSING "stb (stb/stb_image_write.h)")
endif()
if(WEFT_VIEWER_DEPS_MISSING)
  string(REPLACE ";" ", " _weft_missing "${WEFT_VIEWER_DEPS_MISSING}")
  message(STATUS "weft: the viewer is not built: missing ${_weft_missing} (Debian/Ubuntu: "
                 "apt-get install libepoxy-dev libglfw3-dev libegl-dev libcglm-dev libstb-dev; "
                 "see scripts/deps.sh; or put their prefix in CMAKE_PREFIX_PATH)")
else()
  set(WEFT_VIEWER_DEPS_FOUND ON)
  if(NOT TARGET weft_viewer_gl)
    add_library(weft_viewer_gl INTERFACE)
    target_include_directories(weft_viewer_gl SYSTEM INTERFACE ${_weft_gl_incs})
    target_link_libraries(weft_viewer_gl INTERFACE ${_weft_gl_libs})
  endif()
endif()
