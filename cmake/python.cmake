# WEFT_PYTHON: the Python package (python/CMakeLists.txt). AUTO builds it when a Python 3 with its
# development files and NumPy is found. The distribution's interpreter (/usr/bin/python3, whose
# NumPy and PyTorch come from the package manager) is preferred over whatever `python3` comes
# first on PATH (a pyenv shim, a virtualenv without NumPy); -DPython3_EXECUTABLE=... overrides.
# Sanitizer builds keep it off: an instrumented extension cannot be loaded by a normal python.
set(WEFT_HAVE_PYTHON OFF)
if(NOT WEFT_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    execute_process(COMMAND /usr/bin/python3 -c "import numpy" RESULT_VARIABLE weft_sys_numpy
                    OUTPUT_QUIET ERROR_QUIET)
    if(weft_sys_numpy EQUAL 0)
      set(Python3_EXECUTABLE /usr/bin/python3)
    endif()
  endif()
  find_package(Python3 3.8 COMPONENTS Interpreter Development.Module NumPy)
  if(Python3_FOUND AND Python3_Development.Module_FOUND AND Python3_NumPy_FOUND)
    set(WEFT_HAVE_PYTHON ON)
  elseif(WEFT_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "WEFT_PYTHON=ON but no Python 3 with development files and NumPy was found "
                        "(Debian: apt install python3-dev python3-numpy; or "
                        "-DPython3_EXECUTABLE=/path/to/python3), or configure with -DWEFT_PYTHON=OFF")
  endif()
  if(WEFT_SANITIZE AND WEFT_HAVE_PYTHON)
    message(STATUS "weft: the Python package is not built under sanitizers (WEFT_SANITIZE)")
    set(WEFT_HAVE_PYTHON OFF)
  endif()
endif()
message(STATUS "weft: Python package ${WEFT_HAVE_PYTHON} (${Python3_EXECUTABLE})")
if(WEFT_HAVE_PYTHON)
  add_subdirectory(python)
endif()
