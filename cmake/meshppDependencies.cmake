# meshpp's dependencies, found the same way by meshpp's own build and by its package config.
# All come from Debian packages: libboost-mpi-dev openmpi-bin libopenmpi-dev libxtensor-dev
# libxsimd-dev libopenblas-dev zlib1g-dev.
# Optional: libhdf5-openmpi-dev (parallel HDF5, for meshpp/io/checkpoint.hpp, see below).
# zlib: meshpp/io/idx.hpp reads the gzip'd IDX files Debian's dataset-fashion-mnist ships.
include(CMakeFindDependencyMacro)

find_dependency(MPI COMPONENTS CXX)
find_dependency(Boost 1.74 COMPONENTS mpi)
find_dependency(xtensor)
find_dependency(xsimd)  # meshpp/ops/softmax.hpp: the vectorized exp of softmax's rows
# Any BLAS with the standard CBLAS interface (cblas.h, int sizes) will do: einsum calls only
# cblas_sgemm and cblas_dgemm. OpenBLAS by default; -DBLA_VENDOR=... chooses another (the
# reference BLAS is many times slower). The cblas.h found first on the include path must be
# the chosen library's.
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR OpenBLAS)
endif()
find_dependency(BLAS)
find_dependency(ZLIB)

# Optional: parallel HDF5 (Debian's libhdf5-openmpi-dev), which meshpp/io/checkpoint.hpp needs
# through the target meshpp::hdf5. Without it everything else builds as before; that header
# is then unavailable (meshpp.hpp does not include it). A serial HDF5 is not enough: every
# rank writes its own block of one file. MESHPP_HDF5_FOUND says whether it was found.
# Found by hand rather than with FindHDF5, whose C component needs the C language enabled in
# the project using meshpp: the header and library under hdf5/openmpi (Debian), hdf5/mpich or
# plain (HDF5_ROOT), and H5pubconf.h saying H5_HAVE_PARALLEL. -DMESHPP_WITH_HDF5=OFF: not looked for.
if(DEFINED MESHPP_WITH_HDF5 AND NOT MESHPP_WITH_HDF5)
  set(MESHPP_HDF5_FOUND FALSE)
elseif(NOT TARGET meshpp_hdf5_library)
  find_path(MESHPP_HDF5_INCLUDE_DIR hdf5.h
    PATH_SUFFIXES hdf5/openmpi hdf5/mpich include/hdf5/openmpi
    HINTS ENV HDF5_ROOT ${HDF5_ROOT} PATHS /usr/include)
  find_library(MESHPP_HDF5_LIBRARY NAMES hdf5
    PATH_SUFFIXES hdf5/openmpi hdf5/mpich lib/x86_64-linux-gnu/hdf5/openmpi
    HINTS ENV HDF5_ROOT ${HDF5_ROOT} PATHS /usr/lib/x86_64-linux-gnu)
  set(MESHPP_HDF5_FOUND FALSE)
  if(MESHPP_HDF5_INCLUDE_DIR AND MESHPP_HDF5_LIBRARY AND EXISTS "${MESHPP_HDF5_INCLUDE_DIR}/H5pubconf.h")
    file(STRINGS "${MESHPP_HDF5_INCLUDE_DIR}/H5pubconf.h" meshpp_hdf5_parallel
      REGEX "^#define H5_HAVE_PARALLEL 1")
    file(STRINGS "${MESHPP_HDF5_INCLUDE_DIR}/H5pubconf.h" meshpp_hdf5_version
      REGEX "^#define H5_VERSION ")
    string(REGEX REPLACE ".*\"(.*)\".*" "\\1" MESHPP_HDF5_VERSION "${meshpp_hdf5_version}")
    if(meshpp_hdf5_parallel)
      set(MESHPP_HDF5_FOUND TRUE)
      add_library(meshpp_hdf5_library INTERFACE IMPORTED)
      target_include_directories(meshpp_hdf5_library INTERFACE ${MESHPP_HDF5_INCLUDE_DIR})
      target_link_libraries(meshpp_hdf5_library INTERFACE ${MESHPP_HDF5_LIBRARY} MPI::MPI_CXX)
    endif()
  endif()
else()
  set(MESHPP_HDF5_FOUND TRUE)
endif()
