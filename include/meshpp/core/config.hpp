// meshpp/core/config.hpp — detail: compiler-specific spellings.
#pragma once

// MESHPP_IVDEP: before a loop, "its iterations do not depend on each other" (each writes
// its own element), so the compiler vectorizes it without runtime alias checks.
#if defined(__clang__)
#define MESHPP_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define MESHPP_IVDEP _Pragma("GCC ivdep")
#else
#define MESHPP_IVDEP
#endif

// MESHPP_KERNEL: before a kernel that is a template of the element type alone (it runs on
// descriptors: sizes, strides, mesh masks), "do not inline it into its callers". Each
// translation unit then optimizes one copy per element type, however many shapes, layouts and
// meshes call it, rather than one inlined copy in every caller (docs/building.md, Compile time).
// The kernels do enough work a call (a gemm, a collective, a pass over a slice) that the call costs
// nothing measurable.
#if defined(__GNUC__) || defined(__clang__)
#define MESHPP_KERNEL __attribute__((noinline))
#else
#define MESHPP_KERNEL
#endif

// MESHPP_KERNEL_INSTANCE: after each kernel that is a template of the element type, its float
// and double instances are named (`MESHPP_KERNEL_INSTANCE void k<float>(...);`) for the
// optional kernels library (CMake: MESHPP_KERNELS_LIBRARY=ON, target meshpp::kernels). A
// program linking meshpp::kernels (which defines MESHPP_SEPARATE_KERNELS) declares them
// `extern template`: its translation units compile no copy and call the library's. The
// library's one source (src/kernels.cpp, MESHPP_KERNELS_SOURCE) instantiates them. Header-only
// (the default), neither is defined and the names are skipped.
#if defined(MESHPP_KERNELS_SOURCE)
#define MESHPP_KERNEL_INSTANCE template
#elif defined(MESHPP_SEPARATE_KERNELS)
#define MESHPP_KERNEL_INSTANCE extern template
#endif
