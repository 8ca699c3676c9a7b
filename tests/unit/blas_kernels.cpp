// meshpp::environment's warning about OpenBLAS kernels older than the CPU: given for the
// kernels written before AVX2 on a CPU with AVX2 and FMA, naming the kernel and the
// OPENBLAS_CORETYPE that fits the CPU; not given for current kernels or on a CPU without them.
#include <meshpp/core/environment.hpp>

#include <string>

#include "testing.hpp"

using meshpp::detail::blas_kernel_advice;

TEST_CASE("blas_kernel_advice: old kernels on an AVX2 or AVX-512 CPU get the fitting coretype") {
  const std::string on_avx512 = blas_kernel_advice("Prescott", true, true);
  CHECK(on_avx512.find("OpenBLAS runs its Prescott kernels on a CPU with AVX-512") !=
        std::string::npos);
  CHECK(on_avx512.find("OPENBLAS_CORETYPE=SkylakeX") != std::string::npos);
  CHECK(on_avx512.find("MESHPP_QUIET_BLAS=1") != std::string::npos);
  const std::string on_avx2 = blas_kernel_advice("Nehalem", true, false);
  CHECK(on_avx2.find("its Nehalem kernels on a CPU with AVX2") != std::string::npos);
  CHECK(on_avx2.find("OPENBLAS_CORETYPE=Haswell") != std::string::npos);
  CHECK(!blas_kernel_advice("Sandybridge", true, false).empty());
  CHECK(!blas_kernel_advice("Nano", true, false).empty());
  CHECK(!blas_kernel_advice("Steamroller", true, false).empty());
}

TEST_CASE("blas_kernel_advice: nothing for current kernels or a CPU without AVX2") {
  CHECK(blas_kernel_advice("Haswell", true, false).empty());
  CHECK(blas_kernel_advice("SkylakeX", true, true).empty());
  CHECK(blas_kernel_advice("Zen", true, false).empty());
  CHECK(blas_kernel_advice("Prescott", false, false).empty());
  CHECK(blas_kernel_advice("", true, true).empty());
}
