# meshpp_mpi_command(<out-var> <ranks> <program> [args...])
# The command line that runs <program> on <ranks> MPI ranks. --oversubscribe is passed only
# when the ranks outnumber this machine's cores: set globally, it makes Open MPI yield when
# idle and slows collectives among few ranks several times over.
find_package(MPI REQUIRED COMPONENTS CXX)
cmake_host_system_information(RESULT MESHPP_CORES QUERY NUMBER_OF_PHYSICAL_CORES)

function(meshpp_mpi_command out ranks program)
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks})
  if(ranks GREATER MESHPP_CORES)
    list(APPEND cmd --oversubscribe)
  endif()
  list(APPEND cmd ${MPIEXEC_PREFLAGS} ${program} ${ARGN} ${MPIEXEC_POSTFLAGS})
  set(${out} ${cmd} PARENT_SCOPE)
endfunction()

# Environment for meshpp's MPI runs: Open MPI as root (CI runs as root) and one BLAS thread
# per rank, so ranks do not fight over cores.
set(MESHPP_MPI_ENVIRONMENT
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OPENBLAS_NUM_THREADS=1)
