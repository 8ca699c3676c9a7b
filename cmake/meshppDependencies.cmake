# meshpp's dependencies, found the same way by meshpp's own build and by its package config.
# All come from Debian packages: libboost-mpi-dev openmpi-bin libopenmpi-dev libxtensor-dev
# libxtensor-blas-dev libxsimd-dev libopenblas-dev zlib1g-dev.
# zlib: meshpp/io/idx.hpp reads the gzip'd IDX files Debian's dataset-fashion-mnist ships.
include(CMakeFindDependencyMacro)

find_dependency(MPI COMPONENTS CXX)
find_dependency(Boost 1.74 COMPONENTS mpi)
find_dependency(xtensor)
find_dependency(xsimd)  # meshpp/ops/softmax.hpp: the vectorized exp of softmax's rows
find_dependency(xtensor-blas)
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR OpenBLAS)  # the reference BLAS is many times slower; override to choose
endif()
find_dependency(BLAS)
find_dependency(ZLIB)
