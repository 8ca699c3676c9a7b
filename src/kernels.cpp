// The kernels library (CMake: MESHPP_KERNELS_LIBRARY=ON, target meshpp::kernels): every kernel
// that is a template of the element type, instantiated here once for float and double. The
// headers name those instances after each kernel (MESHPP_KERNEL_INSTANCE, core/config.hpp):
// here as explicit instantiations, in a program linking meshpp::kernels as extern templates.
#ifndef MESHPP_KERNELS_SOURCE
#error "src/kernels.cpp is compiled with MESHPP_KERNELS_SOURCE defined (the meshpp_kernels target)"
#endif

#include "meshpp/meshpp.hpp"
