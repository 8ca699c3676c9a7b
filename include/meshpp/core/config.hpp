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
