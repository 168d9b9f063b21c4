# Finds what the viewer needs, before the top level declares WEFT_VIEWER (whose default is ON only
# when all of it is there). Sets WEFT_VIEWER_DEPS_FOUND and, when something is missing,
# WEFT_VIEWER_DEPS_MISSING (what to install).
set(WEFT_VIEWER_DEPS_FOUND OFF)
set(WEFT_VIEWER_DEPS_MISSING "")
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  set(WEFT_VIEWER_DEPS_MISSING "pkg-config")
else()
  foreach(mod epoxy glfw3 egl cglm)
    pkg_check_modules(WEFT_PC_${mod} QUIET ${mod})
    if(NOT WEFT_PC_${mod}_FOUND)
      list(APPEND WEFT_VIEWER_DEPS_MISSING "${mod}")
    endif()
  endforeach()
endif()
find_path(WEFT_STB_INCLUDE_DIR stb/stb_image_write.h PATHS /usr/include /usr/local/include)
if(NOT WEFT_STB_INCLUDE_DIR)
  list(APPEND WEFT_VIEWER_DEPS_MISSING "stb (stb/stb_image_write.h)")
endif()
if(WEFT_VIEWER_DEPS_MISSING)
  string(REPLACE ";" ", " _weft_missing "${WEFT_VIEWER_DEPS_MISSING}")
  message(STATUS "weft: the viewer is not built: missing ${_weft_missing} (Debian/Ubuntu: "
                 "apt-get install pkg-config libepoxy-dev libglfw3-dev libegl-dev libcglm-dev "
                 "libstb-dev; see scripts/deps.sh)")
else()
  set(WEFT_VIEWER_DEPS_FOUND ON)
endif()
