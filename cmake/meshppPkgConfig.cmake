# meshppPkgConfig.cmake — meshpp.pc, meshpp for pkg-config, beside the CMake package (included
# by the top CMakeLists.txt after the dependencies are found):
#
#   c++ app.cpp -o app $(pkg-config --cflags --libs meshpp)
#
# installed to <datadir>/pkgconfig (header-only: arch-independent, as the CMake package),
# which pkg-config searches under /usr and /usr/local; another prefix goes on PKG_CONFIG_PATH.
# Cflags: meshpp's include directory and -std=c++20. Requires: the pkg-config modules of the
# dependencies that have one, MESHPP_PKGCONFIG_REQUIRES (below). Libs: Boost.MPI and
# Boost.Serialization, which have no module (with -I and -L for a Boost outside the compiler's
# own directories, as found here). consumer/pkg_config builds and runs a program with it.

# The modules meshpp.pc requires. By default: the MPI found here if it is Open MPI (ompi-cxx,
# not ompi-c: Open MPI 4's mpi.h declares its C++ bindings in a C++ program, whose library,
# libmpi_cxx, a program then links), xtensor, xsimd, OpenBLAS when BLA_VENDOR is OpenBLAS (the
# default), zlib. Another MPI or BLAS: name its module here, or leave it out and
# compile with the MPI's own compiler wrapper (mpicxx), which brings MPI's flags itself.
set(meshpp_pc_mpi "")
foreach(dir IN LISTS MPI_CXX_INCLUDE_DIRS)
  if(EXISTS "${dir}/mpi.h")
    file(STRINGS "${dir}/mpi.h" meshpp_open_mpi REGEX "^#define OPEN_MPI 1")
    if(meshpp_open_mpi)
      set(meshpp_pc_mpi ompi-cxx)
    endif()
    break()
  endif()
endforeach()
set(meshpp_pc_blas "")
if(BLA_VENDOR STREQUAL "OpenBLAS")
  set(meshpp_pc_blas openblas)
endif()
string(JOIN " " meshpp_pc_default ${meshpp_pc_mpi} xtensor xsimd ${meshpp_pc_blas} zlib)
set(MESHPP_PKGCONFIG_REQUIRES "${meshpp_pc_default}" CACHE STRING
    "The pkg-config modules meshpp.pc requires (MPI, xtensor, xsimd, BLAS, zlib)")
if(NOT meshpp_pc_mpi AND MESHPP_PKGCONFIG_REQUIRES STREQUAL meshpp_pc_default)
  message(STATUS "meshpp: meshpp.pc names no MPI module (the MPI found is not Open MPI): "
                 "compile with mpicxx, or name its module in MESHPP_PKGCONFIG_REQUIRES")
endif()

# Boost.MPI: -I and -L only where the compiler would not look anyway
set(MESHPP_PC_BOOST_CFLAGS "")
set(MESHPP_PC_BOOST_LIBS "")
foreach(dir IN LISTS Boost_INCLUDE_DIRS)
  if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(APPEND MESHPP_PC_BOOST_CFLAGS " -I${dir}")
  endif()
endforeach()
if(TARGET Boost::mpi)
  get_target_property(meshpp_boost_mpi Boost::mpi LOCATION)
  if(meshpp_boost_mpi)
    get_filename_component(meshpp_boost_dir "${meshpp_boost_mpi}" DIRECTORY)
    if(NOT meshpp_boost_dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      string(APPEND MESHPP_PC_BOOST_LIBS " -L${meshpp_boost_dir}")
    endif()
  endif()
endif()

# Paths relative to the .pc file's directory (pkg-config's ${pcfiledir}), so that
# cmake --install --prefix <anywhere> makes a file that works there
set(MESHPP_PKGCONFIG_DIR "${CMAKE_INSTALL_DATADIR}/pkgconfig")
if(IS_ABSOLUTE "${MESHPP_PKGCONFIG_DIR}")
  set(MESHPP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH meshpp_pc_up "/prefix/${MESHPP_PKGCONFIG_DIR}" "/prefix")
  string(REGEX REPLACE "/$" "" meshpp_pc_up "${meshpp_pc_up}")
  set(MESHPP_PC_PREFIX "\${pcfiledir}/${meshpp_pc_up}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(MESHPP_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(MESHPP_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/meshpp.pc.in ${PROJECT_BINARY_DIR}/meshpp.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/meshpp.pc DESTINATION ${MESHPP_PKGCONFIG_DIR})
