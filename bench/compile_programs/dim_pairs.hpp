// dim_pairs.hpp: sixteen pairs of dims and a mesh for the ops_* programs of bench/compile.
// Each pair makes tensors of types of their own, so a program that runs one operation per pair
// compiles it sixteen times, and the difference between two such programs, over 16, is what
// one operation of the kind they differ in costs to compile.
#pragma once

#include <meshpp/meshpp.hpp>

namespace mp = meshpp;

namespace compile_programs {
MESHPP_DIM(all);
MESHPP_DIM(out);
// sixteen pairs of dims: each pair makes tensors of types of their own
#define MESHPP_COMPILE_PAIRS(X) \
  X(a1, b1)                     \
  X(a2, b2)                     \
  X(a3, b3)                     \
  X(a4, b4)                     \
  X(a5, b5)                     \
  X(a6, b6)                     \
  X(a7, b7)                     \
  X(a8, b8)                     \
  X(a9, b9)                     \
  X(a10, b10)                   \
  X(a11, b11)                   \
  X(a12, b12)                   \
  X(a13, b13)                   \
  X(a14, b14)                   \
  X(a15, b15)                   \
  X(a16, b16)
#define MESHPP_COMPILE_DECLARE(A, B) \
  MESHPP_DIM(A);                     \
  MESHPP_DIM(B);
MESHPP_COMPILE_PAIRS(MESHPP_COMPILE_DECLARE)

using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<out, all>>>;

// sum_over_pairs(f): f.template operator()<A, B>() summed over the pairs
template <class F>
float sum_over_pairs(F&& f) {
  float sum = 0;
#define MESHPP_COMPILE_CALL(A, B) sum += f.template operator()<A, B>();
  MESHPP_COMPILE_PAIRS(MESHPP_COMPILE_CALL)
#undef MESHPP_COMPILE_CALL
  return sum;
}

}  // namespace compile_programs
