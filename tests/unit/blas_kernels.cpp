// meshpp::environment's choice of OpenBLAS kernels (detail::choose_blas_kernels): where
// OpenBLAS runs kernels written before AVX2 on a CPU with AVX2 and FMA, the better kernels
// are named (SkylakeX with AVX-512 F, BW and VL, else Haswell) and, with a DYNAMIC_ARCH
// OpenBLAS, switched to, after which sgemm still computes the right product; the user's
// OPENBLAS_CORETYPE and MESHPP_BLAS_KERNELS=keep are obeyed, another MESHPP_BLAS_KERNELS
// value named and ignored; the messages name the kernels, the CPU and why the kernels were
// kept. Where the user's OPENBLAS_CORETYPE keeps AVX2 kernels on an AVX-512 CPU, they stay
// and a warning says what they cost.
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

TEST_CASE("blas_kernel_advice and blas_kernel_switch_note name the kernels, the CPU and why") {
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string asked =
      mpd::blas_kernel_advice("Prescott", "family 6, model 207", true, true, mpd::why_kept::asked);
  CHECK(has(asked,
            "OpenBLAS runs its Prescott kernels on a CPU with AVX-512 (family 6, model "
            "207)"));
  CHECK(has(asked, "as OPENBLAS_CORETYPE or MESHPP_BLAS_KERNELS=keep asked"));
  CHECK(has(asked, "OPENBLAS_CORETYPE=SkylakeX on every rank"));
  CHECK(has(asked, "MESHPP_QUIET_BLAS=1"));
  CHECK(has(mpd::blas_kernel_advice("Nehalem", "x", true, false, mpd::why_kept::asked),
            "OPENBLAS_CORETYPE=Haswell"));
  CHECK(has(mpd::blas_kernel_advice("Nehalem", "x", true, false, mpd::why_kept::cannot_switch),
            "not a DYNAMIC_ARCH build"));
  CHECK(has(mpd::blas_kernel_advice("Nehalem", "x", true, false, mpd::why_kept::switch_failed),
            "asked for its Haswell kernels, it kept these"));
  CHECK(mpd::blas_kernel_advice("Haswell", "x", true, false, mpd::why_kept::asked).empty());
  const std::string note =
      mpd::blas_kernel_switch_note("Prescott", "SkylakeX", "family 6, model 207");
  CHECK(has(note, "chose its Prescott kernels"));
  CHECK(has(note, "running its SkylakeX kernels instead"));
  CHECK(has(note, "MESHPP_BLAS_KERNELS=keep"));
}

TEST_CASE("avx2_kernels_advice: the user's OPENBLAS_CORETYPE keeping AVX2 kernels on AVX-512") {
  const std::string advice =
      mpd::avx2_kernels_advice("Haswell", "family 26, model 2", true, "Haswell");
  CHECK(advice.find("meshpp: OpenBLAS runs its Haswell kernels (AVX2) on a CPU with AVX-512 "
                    "(family 26, model 2), as OPENBLAS_CORETYPE=Haswell asks") == 0);
  CHECK(advice.find("OPENBLAS_CORETYPE=SkylakeX on every rank") != std::string::npos);
  CHECK(advice.find("MESHPP_QUIET_BLAS=1") != std::string::npos);
  CHECK(mpd::avx2_kernels_advice("Zen", "x", true, "Zen").find("its Zen kernels (AVX2)") !=
        std::string::npos);
  CHECK(mpd::avx2_kernels_advice("Haswell", "x", false, "Haswell").empty());  // no AVX-512
  CHECK(mpd::avx2_kernels_advice("Haswell", "x", true, "").empty());  // OpenBLAS's own choice
  CHECK(mpd::avx2_kernels_advice("SkylakeX", "x", true, "SkylakeX").empty());
  CHECK(mpd::avx2_kernels_advice("Prescott", "x", true, "Prescott").empty());  // warned elsewhere
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

// sgemm_error(): the largest difference between sgemm's C = 2 A B + C and the same sum in
// double, on sizes past every kernel's blocking, with remainders (small integers and quarters:
// every kernel sums them exactly)
double sgemm_error() {
  const std::size_t m = 203, n = 197, k = 1031;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i * 7 % 13) - 6.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i * 5 % 11) * 0.25f;
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i % 5);
  const std::vector<float> c0 = c;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 2.0f, a.data(), ki, b.data(),
              ni, 1.0f, c.data(), ni);
  double worst = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::size_t l = 0; l < k; ++l) sum += double(a[i * k + l]) * double(b[l * n + j]);
      worst = std::max(worst, std::abs(2 * sum + double(c0[i * n + j]) - double(c[i * n + j])));
    }
  return worst;
}

}  // namespace

TEST_CASE("choose_blas_kernels: switches a DYNAMIC_ARCH OpenBLAS off old kernels, unless told") {
  const auto [avx2, avx512] = mpd::cpu_vector_units();
  if (!openblas_get_corename || !gotoblas_dynamic_init || !gotoblas_dynamic_quit || !avx2) {
    MESSAGE("not a DYNAMIC_ARCH OpenBLAS on a CPU with AVX2 and FMA: nothing to switch");
    return;
  }
  const std::string original = openblas_get_corename();
  const std::string better(mpd::better_blas_kernels("Prescott", avx2, avx512));

  // as OpenBLAS 0.3.21 picks on a CPU model it does not know
  REQUIRE(pick("Prescott") == "Prescott");
  const std::string note = mpd::choose_blas_kernels();
  const std::string now = openblas_get_corename();
  CHECK(now != "Prescott");
  CHECK(mpd::better_blas_kernels(now, avx2, avx512).empty());  // kernels the CPU supports
  if (now == better)
    CHECK(note.find("running its " + better + " kernels instead") != std::string::npos);
  else  // a build without `better`, which gave other current kernels
    CHECK(note.empty());
  CHECK(std::getenv("OPENBLAS_CORETYPE") == nullptr);  // unset again
  CHECK(sgemm_error() == 0.0);

  REQUIRE(pick("Prescott") == "Prescott");
  REQUIRE(setenv("MESHPP_BLAS_KERNELS", "keep", 1) == 0);
  CHECK(mpd::choose_blas_kernels().find("MESHPP_BLAS_KERNELS=keep asked") != std::string::npos);
  CHECK(std::string(openblas_get_corename()) == "Prescott");
  REQUIRE(unsetenv("MESHPP_BLAS_KERNELS") == 0);

  // a value other than keep (a typo): named in a line of its own before what it would say
  // without it, and ignored (the kernels are switched); with OPENBLAS_CORETYPE too
  const std::string typo_line =
      "meshpp: MESHPP_BLAS_KERNELS=kep is ignored: the one value it takes is keep (keep "
      "OpenBLAS's choice of kernels)";
  REQUIRE(pick("Prescott") == "Prescott");
  REQUIRE(setenv("MESHPP_BLAS_KERNELS", "kep", 1) == 0);
  CHECK(mpd::choose_blas_kernels() == typo_line + (note.empty() ? "" : "\n" + note));
  CHECK(std::string(openblas_get_corename()) == now);
  REQUIRE(pick("Prescott") == "Prescott");
  REQUIRE(setenv("OPENBLAS_CORETYPE", "Prescott", 1) == 0);
  const std::string both = mpd::choose_blas_kernels();
  CHECK(both.find(typo_line + "\n") == 0);
  CHECK(both.find("as OPENBLAS_CORETYPE") != std::string::npos);
  CHECK(std::string(openblas_get_corename()) == "Prescott");
  REQUIRE(unsetenv("OPENBLAS_CORETYPE") == 0);
  REQUIRE(unsetenv("MESHPP_BLAS_KERNELS") == 0);

  REQUIRE(pick("Prescott") == "Prescott");
  REQUIRE(setenv("OPENBLAS_CORETYPE", "Prescott", 1) == 0);  // the user's choice
  CHECK(mpd::choose_blas_kernels().find("as OPENBLAS_CORETYPE") != std::string::npos);
  CHECK(std::string(openblas_get_corename()) == "Prescott");
  CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == "Prescott");
  REQUIRE(unsetenv("OPENBLAS_CORETYPE") == 0);

  if (avx512) {  // the user's Haswell kernels on an AVX-512 CPU: kept, and what they cost said
    REQUIRE(pick("Haswell") == "Haswell");
    REQUIRE(setenv("OPENBLAS_CORETYPE", "Haswell", 1) == 0);
    CHECK(mpd::choose_blas_kernels().find("as OPENBLAS_CORETYPE=Haswell asks") !=
          std::string::npos);
    CHECK(std::string(openblas_get_corename()) == "Haswell");
    REQUIRE(unsetenv("OPENBLAS_CORETYPE") == 0);
  }

  REQUIRE(pick(now) == now);  // current kernels stay, silently
  CHECK(mpd::choose_blas_kernels().empty());
  CHECK(std::string(openblas_get_corename()) == now);

  pick(original);  // the kernels OpenBLAS chose for the other tests of this program
}
#endif
