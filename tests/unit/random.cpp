// Philox4x32-10 against Random123's known answers, and the distributions built on it.
#include <meshpp/core/random.hpp>

#include <array>
#include <cmath>
#include <cstdint>

#include "testing.hpp"

namespace mp = meshpp;

using words = std::array<std::uint32_t, 4>;

// Random123 1.14, examples/kat_vectors, lines "philox4x32 10 <counter> <key> <expected>".
TEST_CASE("philox4x32-10 matches Random123's known-answer vectors") {
  // constexpr: the generator is usable at compile time
  constexpr words zeros = mp::philox4x32({0u, 0u, 0u, 0u}, {0u, 0u});
  CHECK(zeros == words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});

  const words ones = mp::philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                    {0xffffffffu, 0xffffffffu});
  CHECK(ones == words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});

  // counter and key from the digits of pi
  const words pi = mp::philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                  {0xa4093822u, 0x299f31d0u});
  CHECK(pi == words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("every counter word and key word changes the output") {
  const words base = mp::philox4x32({1u, 2u, 3u, 4u}, {5u, 6u});
  for (int i = 0; i < 4; ++i) {
    words c{1u, 2u, 3u, 4u};
    c[i] ^= 1u;
    CHECK(mp::philox4x32(c, {5u, 6u}) != base);
  }
  CHECK(mp::philox4x32({1u, 2u, 3u, 4u}, {4u, 6u}) != base);
  CHECK(mp::philox4x32({1u, 2u, 3u, 4u}, {5u, 7u}) != base);
}

TEST_CASE("uniform_at and normal_at are pure functions of (seed, index)") {
  CHECK(mp::uniform_at<double>(7, 12345) == mp::uniform_at<double>(7, 12345));
  CHECK(mp::normal_at<float>(7, 12345) == mp::normal_at<float>(7, 12345));
  // the whole 64-bit seed and the whole 64-bit index count
  const std::uint64_t high = std::uint64_t{1} << 32;
  CHECK(mp::uniform_at<double>(7, 3) != mp::uniform_at<double>(7 + high, 3));
  CHECK(mp::uniform_at<double>(7, 3) != mp::uniform_at<double>(7, 3 + high));
  CHECK(mp::normal_at<double>(7, 3) != mp::normal_at<double>(7 + high, 3));
  CHECK(mp::normal_at<double>(7, 3) != mp::normal_at<double>(7, 3 + high));
}

TEST_CASE("different seeds give different streams") {
  constexpr int n = 1000;
  int same_uniform = 0, same_normal = 0, same_index = 0;
  for (int i = 0; i < n; ++i) {
    same_uniform += mp::uniform_at<float>(1, i) == mp::uniform_at<float>(2, i);
    same_normal += mp::normal_at<double>(1, i) == mp::normal_at<double>(2, i);
    same_index += mp::normal_at<double>(1, i) == mp::normal_at<double>(1, i + 1);
  }
  // float uniforms take 24 bits: a coincidence among 1000 draws has odds about 1000 / 2^24
  CHECK(same_uniform <= 1);
  CHECK(same_normal == 0);
  CHECK(same_index == 0);
}

namespace {
struct moments {
  double mean, variance, min, max;
};
template <class F>
moments sample_moments(int n, F&& draw) {
  double sum = 0, sum_sq = 0, lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n; ++i) {
    const double x = draw(static_cast<std::uint64_t>(i));
    sum += x;
    sum_sq += x * x;
    lo = std::fmin(lo, x);
    hi = std::fmax(hi, x);
  }
  const double mean = sum / n;
  return {mean, sum_sq / n - mean * mean, lo, hi};
}
constexpr int samples = 100000;
}  // namespace

// Bounds are about 6 standard errors wide for n = 100k: loose enough never to fail by chance,
// tight enough to catch a wrong scale, shift or a stuck generator.
TEST_CASE_TEMPLATE("uniform_at is uniform in [0, 1)", T, float, double) {
  const auto m = sample_moments(samples, [](std::uint64_t i) { return mp::uniform_at<T>(3, i); });
  CHECK(m.min >= 0.0);
  CHECK(m.max < 1.0);
  CHECK(m.min < 1e-3);  // the range is covered
  CHECK(m.max > 1 - 1e-3);
  CHECK(std::abs(m.mean - 0.5) < 0.006);            // standard error 0.0009
  CHECK(std::abs(m.variance - 1.0 / 12) < 0.0015);  // standard error 0.00024
}

TEST_CASE_TEMPLATE("normal_at is standard normal", T, float, double) {
  const auto m = sample_moments(samples, [](std::uint64_t i) { return mp::normal_at<T>(4, i); });
  CHECK(std::isfinite(m.min));
  CHECK(std::isfinite(m.max));
  CHECK(std::abs(m.mean) < 0.02);            // standard error 0.0032
  CHECK(std::abs(m.variance - 1.0) < 0.03);  // standard error 0.0045
  // tails: about 0.27% of draws beyond 3 sigma
  int beyond = 0;
  for (int i = 0; i < samples; ++i) beyond += std::abs(mp::normal_at<T>(4, i)) > T(3);
  CHECK(beyond > 170);
  CHECK(beyond < 370);
}

TEST_CASE("float draws are the double draws rounded") {
  for (std::uint64_t i = 0; i < 100; ++i) {
    CHECK(mp::normal_at<float>(9, i) == static_cast<float>(mp::normal_at<double>(9, i)));
  }
}
