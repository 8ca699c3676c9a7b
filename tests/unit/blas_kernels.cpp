// meshpp::environment's choice of OpenBLAS kernels (detail::choose_blas_kernels): where
// OpenBLAS runs kernels written before AVX2 on a CPU with AVX2 and FMA, the better kernels
// are named (SkylakeX with AVX-512 F, BW and VL, else Haswell) and, with a DYNAMIC_ARCH
// OpenBLAS, switched to, after which sgemm still computes the right product; the user's
// OPENBLAS_CORETYPE and MESHPP_BLAS_KERNELS=keep are obeyed; the messages name the kernels.
#include <meshpp/core/environment.hpp>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "testing.hpp"

namespace mpd = meshpp::detail;

TEST_CASE("better_blas_kernels: old kernels on an AVX2 or AVX-512 CPU get the fitting ones") {
  CHECK(mpd::better_blas_kernels("Prescott", true, true) == "SkylakeX");
  CHECK(mpd::better_blas_kernels("Nehalem", true, false) == "Haswell");
  CHECK(mpd::better_blas_kernels("Sandybridge", true, false) == "Haswell");
  CHECK(mpd::better_blas_kernels("Nano", true, true) == "SkylakeX");
  CHECK(mpd::better_blas_kernels("Steamroller", true, false) == "Haswell");
}

TEST_CASE("better_blas_kernels: nothing for current kernels or a CPU without AVX2") {
  CHECK(mpd::better_blas_kernels("Haswell", true, false).empty());
  CHECK(mpd::better_blas_kernels("SkylakeX", true, true).empty());
  CHECK(mpd::better_blas_kernels("Zen", true, false).empty());
  CHECK(mpd::better_blas_kernels("Prescott", false, false).empty());
  CHECK(mpd::better_blas_kernels("", true, true).empty());
}

TEST_CASE("blas_kernel_advice and blas_kernel_switch_note name the kernels and the CPU") {
  const std::string advice = mpd::blas_kernel_advice("Prescott", "family 6, model 207", true, true);
  CHECK(advice.find("OpenBLAS runs its Prescott kernels on a CPU with AVX-512 (family 6, model "
                    "207)") != std::string::npos);
  CHECK(advice.find("OPENBLAS_CORETYPE=SkylakeX") != std::string::npos);
  CHECK(advice.find("MESHPP_QUIET_BLAS=1") != std::string::npos);
  CHECK(mpd::blas_kernel_advice("Nehalem", "x", true, false).find("OPENBLAS_CORETYPE=Haswell") !=
        std::string::npos);
  CHECK(mpd::blas_kernel_advice("Haswell", "x", true, false).empty());
  const std::string note =
      mpd::blas_kernel_switch_note("Prescott", "SkylakeX", "family 6, model 207");
  CHECK(note.find("chose its Prescott kernels") != std::string::npos);
  CHECK(note.find("running its SkylakeX kernels instead") != std::string::npos);
  CHECK(note.find("MESHPP_BLAS_KERNELS=keep") != std::string::npos);
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

// pick(name): has a DYNAMIC_ARCH OpenBLAS run the kernels it calls `name`, as at start-up;
// returns the name of those it runs then
std::string pick(const std::string& name) {
  REQUIRE(setenv("OPENBLAS_CORETYPE", name.c_str(), 1) == 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  REQUIRE(unsetenv("OPENBLAS_CORETYPE") == 0);
  return openblas_get_corename();
}

// the largest difference between sgemm's C = A B and the same product summed in double
double sgemm_error() {
  const int m = 67, n = 45, k = 129;  // past every kernel's blocking, with remainders
  std::vector<float> a(m * k), b(k * n), c(m * n, -1.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7 % 13)) - 6.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5 % 11)) * 0.25f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
              0.0f, c.data(), n);
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += double(a[i * k + l]) * double(b[l * n + j]);
      worst = std::max(worst, std::abs(sum - double(c[i * n + j])));
    }
  return worst;
}

}  // namespace

TEST_CASE("choose_blas_kernels: switches a DYNAMIC_ARCH OpenBLAS off old kernels, unless told") {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  if (!openblas_get_corename || !gotoblas_dynamic_init || !gotoblas_dynamic_quit || !avx2) {
    MESSAGE("not a DYNAMIC_ARCH OpenBLAS on a CPU with AVX2 and FMA: nothing to switch");
    return;
  }
  const std::string original = openblas_get_corename();
  const std::string better(mpd::better_blas_kernels("Prescott", avx2, avx512));
  REQUIRE(setenv("MESHPP_QUIET_BLAS", "1", 1) == 0);

  REQUIRE(pick("Prescott") ==
          "Prescott");  // as OpenBLAS 0.3.21 picks on a CPU model it does not know
  mpd::choose_blas_kernels();
  CHECK(std::string(openblas_get_corename()) == better);
  CHECK(std::getenv("OPENBLAS_CORETYPE") == nullptr);  // restored
  CHECK(sgemm_error() == 0.0);  // small integers and quarters: every kernel sums them exactly

  REQUIRE(pick("Prescott") == "Prescott");
  REQUIRE(setenv("MESHPP_BLAS_KERNELS", "keep", 1) == 0);
  mpd::choose_blas_kernels();
  CHECK(std::string(openblas_get_corename()) == "Prescott");
  REQUIRE(unsetenv("MESHPP_BLAS_KERNELS") == 0);

  REQUIRE(setenv("OPENBLAS_CORETYPE", "Prescott", 1) == 0);  // the user's choice
  mpd::choose_blas_kernels();
  CHECK(std::string(openblas_get_corename()) == "Prescott");
  CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == "Prescott");
  REQUIRE(unsetenv("OPENBLAS_CORETYPE") == 0);

  REQUIRE(pick(better) == better);  // current kernels stay
  mpd::choose_blas_kernels();
  CHECK(std::string(openblas_get_corename()) == better);

  REQUIRE(unsetenv("MESHPP_QUIET_BLAS") == 0);
  pick(original);  // the kernels OpenBLAS chose for the other tests of this program
}
#endif
