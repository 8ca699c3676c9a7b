// meshpp/core/random.hpp — a counter-based random generator: Philox4x32-10.
//
// A value is a pure function of (seed, counter): a tensor element's counter is its *global*
// linear index, so every layout and rank count draws the same number for the same element,
// with no state to carry between ranks. Philox4x32-10 is the generator of Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3" (SC'11), as in Random123 and cuRAND.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string_view>

namespace meshpp {

/// @brief Philox4x32-10: 4 x 32 random bits for each 128-bit counter under a 64-bit key.
// philox4x32(counter, key) -> 4 words
constexpr std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> c,
                                                  std::array<std::uint32_t, 2> k) {
  constexpr std::uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = m0 * c[0];
    const std::uint64_t p1 = m1 * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    k = {k[0] + w0, k[1] + w1};
  }
  return c;
}

namespace detail {
inline std::array<std::uint32_t, 4> philox_at(std::uint64_t seed, std::uint64_t index) {
  return philox4x32(
      {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}
// 53 random bits as a double in [0, 1)
inline double unit_double(std::uint32_t hi, std::uint32_t lo) {
  return static_cast<double>(((std::uint64_t{hi} << 32) | lo) >> 11) * 0x1p-53;
}
}  // namespace detail

// uniform_at<T>(seed, index): uniform in [0, 1), a function of (seed, index) alone.
// float takes 24 random bits, double 53, so neither can round up to 1.
template <class T>
T uniform_at(std::uint64_t seed, std::uint64_t index) {
  const auto w = detail::philox_at(seed, index);
  if constexpr (sizeof(T) <= 4) {
    return static_cast<T>(static_cast<float>(w[0] >> 8) * 0x1p-24f);
  } else {
    return static_cast<T>(detail::unit_double(w[0], w[1]));
  }
}

// normal_at<T>(seed, index): standard normal by Box-Muller in double, then rounded to T.
template <class T>
T normal_at(std::uint64_t seed, std::uint64_t index) {
  const auto w = detail::philox_at(seed, index);
  const double u1 = 1.0 - detail::unit_double(w[0], w[1]);  // (0, 1]: log(u1) is finite
  const double u2 = detail::unit_double(w[2], w[3]);
  return static_cast<T>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

namespace detail {

// splitmix64's output function: a bijection of 64-bit words that mixes every bit into every
// other.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

// splitmix64{state}.next(): the state advances by the golden gamma, the output is its mix
// (the reference generator of Steele et al.; from state 0: 0xe220a8397b1dcdaf, ...).
struct splitmix64 {
  std::uint64_t state = 0;
  constexpr std::uint64_t next() { return splitmix64_mix(state += 0x9e3779b97f4a7c15u); }
};

}  // namespace detail

/// seed_for(seed, name): the seed of the part called `name` of a model seeded with `seed`: a
/// model takes one seed and gives each layer its own, so adding, removing or reordering layers
/// leaves the others' initial values as they were. (Layers draw seed, seed + 1, ... for their
/// own weights: seeds from names are 64-bit hashes, so these never meet in practice.)
constexpr std::uint64_t seed_for(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325u;  // FNV-1a of the name
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
  return detail::splitmix64_mix(detail::splitmix64_mix(seed) ^ h);
}

}  // namespace meshpp
