# weft_add_mpi_test(NAME SOURCE LABEL): a test program run by mpirun (tests/mpi_harness.h), as
#  - NAME_np1 .. NAME_np4 (labels mpi;LABEL): 1 to 4 ranks on one machine, each with its own CPU
#    devices. Root is allowed (CI runs as root) through Open MPI's environment variables, which
#    other MPIs ignore; --oversubscribe lets 4 ranks share 2 cores;
#  - NAME_cuda_np2, NAME_cuda_np3 (labels mpi_cuda;LABEL; built with CUDA; scripts/gpu-check.sh runs
#    them): the same on CUDA devices, every partition on cuda:0 where there is one GPU, halos
#    through device memory when MPI takes it (CUDA-aware), else staged. Skipped (77) without a GPU.
function(weft_add_mpi_test name source label)
  if(NOT WEFT_HAVE_MPI)
    return()
  endif()
  add_executable(${name} ${source})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE weft::weft MPI::MPI_C m)
  target_compile_options(${name} PRIVATE ${WEFT_C_WARNINGS})
  set(env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
  set(runs cpu:1 cpu:2 cpu:3 cpu:4)
  if(WEFT_HAVE_CUDA)
    list(APPEND runs cuda:2 cuda:3)
  endif()
  foreach(run IN LISTS runs)
    string(REPLACE ":" ";" run ${run})
    list(GET run 0 kind)
    list(GET run 1 np)
    if(kind STREQUAL "cpu")
      set(test ${name}_np${np})
    else()
      set(test ${name}_cuda_np${np})
    endif()
    add_test(NAME ${test}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
                     ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} --device ${kind})
    set_tests_properties(${test} PROPERTIES PROCESSORS 2 ENVIRONMENT "${env}")
    if(kind STREQUAL "cpu")
      set_tests_properties(${test} PROPERTIES LABELS "mpi;${label}" TIMEOUT 300)
    else()
      set_tests_properties(${test} PROPERTIES LABELS "mpi_cuda;${label}" TIMEOUT 600
                                              SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endfunction()
