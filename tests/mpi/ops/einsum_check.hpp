// Shared by the einsum tests (einsum*.cpp): inputs made from the global index, a single-rank
// reference einsum in plain loops, and the check of a distributed einsum against it (values,
// the one allreduce it records, its local flops).
#pragma once

#include <meshpp/core/counters.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "source_location.hpp"
#include "testing.hpp"

namespace einsum_test {

namespace mp = meshpp;

// laid_out_t<Mesh, Rules, T, Dims...>: a tensor of dims Dims on Mesh, laid out by Rules. The
// tests give every tensor its layout this way, on one mesh type per file: each mesh type costs
// compile time in every function it reaches.
template <class Mesh, class Rules, class T, class... Dims>
using laid_out_t =
    mp::tensor<T, mp::shape<Dims...>, mp::layout_for_t<Rules, mp::shape<Dims...>>, Mesh>;

// value_at(seed, global index): a cheap hash of both, in [-1, 1) with 53 significant bits
template <class Index>
double value_at(std::uint64_t seed, const Index& g) {
  std::uint64_t h = (seed + 1) * 0x9E3779B97F4A7C15ull;
  for (std::size_t x : g) h = (h ^ (x + 1)) * 0x100000001B3ull, h ^= h >> 29;
  return static_cast<double>(h >> 11) * 0x1p-52 - 1.0;
}

// make<Tensor>(mesh, sizes, seed): values in [-1, 1), or small integers in [-4, 4] for
// integral types; a function of (seed, global index) alone, so every layout holds the same
// global tensor.
template <class Tensor, class Mesh, class Sizes>
Tensor make(const Mesh& m, const Sizes& sizes, std::uint64_t seed) {
  using T = typename Tensor::value_type;
  return mp::generate<Tensor>(m, sizes, [seed](const auto& g) {
    const double v = value_at(seed, g);
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<int>(v * 4.5 + 4.5) - 4);
    else
      return static_cast<T>(v);
  });
}

// positions<U, S>(): for each dim of S, its position in U
template <class U, class S>
std::vector<std::size_t> positions() {
  return []<class... D>(mp::shape<D...>*) {
    return std::vector<std::size_t>{mp::index_of_v<U, D>...};
  }(static_cast<S*>(nullptr));
}

// as_doubles(x): the elements of an xtensor, row-major, as doubles
template <class X>
std::vector<double> as_doubles(const X& x) {
  return std::vector<double>(x.data(), x.data() + x.size());
}

/// The reference result: for every output index, the sum of a * b over every index of the
/// other dims (value), the sum of |a * b| (magnitude, for the rounding tolerance), and how
/// many terms each sum has.
struct reference_result {
  std::vector<std::size_t> shape;
  std::vector<double> value;
  std::vector<double> magnitude;
  std::size_t terms = 1;
};

// reference_loops(...): plain loops over every index of every dim (extent: the sizes of all
// dims; pa, pb, po: the positions of a's, b's and the output's dims among them). One rank,
// no mesh; not a template, so the tests instantiate nothing heavy per case.
inline reference_result reference_loops(const std::vector<double>& a, const std::vector<double>& b,
                                        const std::vector<std::size_t>& extent,
                                        const std::vector<std::size_t>& pa,
                                        const std::vector<std::size_t>& pb,
                                        const std::vector<std::size_t>& po) {
  reference_result r;
  std::size_t out_count = 1, all_count = 1;
  for (std::size_t p : po) r.shape.push_back(extent[p]), out_count *= extent[p];
  for (std::size_t x : extent) all_count *= x;
  r.value.assign(out_count, 0.0);
  r.magnitude.assign(out_count, 0.0);
  r.terms = out_count ? all_count / out_count : 0;
  auto flat = [&](const std::vector<std::size_t>& pos, const std::vector<std::size_t>& idx) {
    std::size_t at = 0;
    for (std::size_t p : pos) at = at * extent[p] + idx[p];
    return at;
  };
  std::vector<std::size_t> idx(extent.size(), 0);
  for (std::size_t count = 0; count < all_count; ++count) {
    const double product = a[flat(pa, idx)] * b[flat(pb, idx)];
    const std::size_t o = flat(po, idx);
    r.value[o] += product;
    r.magnitude[o] += std::abs(product);
    for (std::size_t i = extent.size(); i-- > 0;) {  // odometer over every dim
      if (++idx[i] < extent[i]) break;
      idx[i] = 0;
    }
  }
  return r;
}

// reference<Out, SA, SB>(a, b, sizes): the reference einsum of the global arrays a (dims SA)
// and b (dims SB), sizes giving every dim's size.
template <class Out, class SA, class SB, class A, class B, class Sizes>
reference_result reference(const A& a, const B& b, const Sizes& sizes) {
  static_assert(A::rank == SA::rank && B::rank == SB::rank);
  using U = mp::shape_union_t<mp::shape_union_t<SA, SB>, Out>;
  const auto e = sizes.template sizes_of<U>();
  return reference_loops(as_doubles(a), as_doubles(b), std::vector<std::size_t>(e.begin(), e.end()),
                         positions<U, SA>(), positions<U, SB>(), positions<U, Out>());
}

// compare(got, integral, ref): integers exactly; floating point within a relative rounding
// bound that grows with the number of terms summed (1e-5 K for float, 1e-12 K for double).
// Reports the first difference unless `quiet`.
inline bool compare(const std::vector<std::size_t>& shape, const std::vector<double>& got,
                    bool integral, double tolerance, const reference_result& ref, bool quiet) {
  if (shape != ref.shape || got.size() != ref.value.size()) {
    if (!quiet) MESSAGE("rank " << meshpp_test::world().rank() << ": result shape differs");
    return false;
  }
  const double rel = tolerance * static_cast<double>(ref.terms);
  for (std::size_t e = 0; e < got.size(); ++e) {
    const bool ok = integral ? got[e] == ref.value[e]  // exact: the reference sums integers
                             : std::abs(got[e] - ref.value[e]) <= rel * ref.magnitude[e];
    if (!ok) {
      if (!quiet) {
        MESSAGE("rank " << meshpp_test::world().rank() << ": element " << e << " is " << got[e]
                        << ", the reference " << ref.value[e]);
      }
      return false;
    }
  }
  return true;
}
template <class X>
bool close_to(const X& got, const reference_result& ref, bool quiet = false) {
  using T = typename X::value_type;
  return compare(std::vector<std::size_t>(got.shape().begin(), got.shape().end()), as_doubles(got),
                 std::is_integral_v<T>, std::is_same_v<T, float> ? 1e-5 : 1e-12, ref, quiet);
}

/// What an einsum must record: one allreduce over the mesh dims in `mask` (or none), and
/// 2 * (local output size) * k_local flops, k_local the local size of the contracted dims.
struct expect {
  bool allreduce;
  unsigned mask;
  std::uint64_t k_local;
};
inline expect no_allreduce(std::uint64_t k_local) { return {false, 0, k_local}; }
inline expect allreduce_over(unsigned mask, std::uint64_t k_local) { return {true, mask, k_local}; }

// counted(k, want, n, s, p, flops): the counters k after one einsum whose result has n local
// values of s bytes, its allreduce (if any) over a group of p (a group of one rank counts
// nothing); flops == false for the one-operand form, which counts no flops.
inline bool counted(const mp::counters& k, const expect& want, std::uint64_t n, std::uint64_t s,
                    std::uint64_t p, bool flops) {
  bool ok = true;
  for (std::size_t kind = 1; kind < mp::collective_kinds; ++kind) {
    ok = ok && k.total(static_cast<mp::collective>(kind)).calls == 0;
  }
  const auto all = k.total(mp::collective::allreduce);
  if (want.allreduce && p > 1) {
    const auto& one = k.at(mp::collective::allreduce, want.mask);
    ok = ok && all.calls == 1 && one.calls == 1 && one.values == n &&
         one.bytes_sent == 2 * (p - 1) * n * s / p;
  } else {
    ok = ok && all.calls == 0 && all.values == 0;
  }
  if (flops) ok = ok && k.einsum_calls() == 1 && k.einsum_flops() == 2 * n * want.k_local;
  if (!ok) MESSAGE("rank " << meshpp_test::world().rank() << " counted:\n" << k.report());
  return ok;
}

// verify(counters_ok, values_ok, where): the two checks of every einsum, in one function that
// is not a template (so no case instantiates assertion code of its own), naming the line of
// the case that failed
inline void verify(bool counters_ok, bool values_ok, const meshpp_test::source_location& where) {
  INFO("the einsum checked at " << where.file_name() << ":" << where.line());
  CHECK_ALL_RANKS(counters_ok);
  CHECK_ALL_RANKS(values_ok);
}

// check_call<Out, SA, SB>(m, call, ga, gb, sizes, want): runs call() (a distributed einsum
// whose inputs are the global arrays ga and gb) right after resetting the counters, and
// checks its gathered result against the reference and its counters against want.
template <class Out, class SA, class SB, class Mesh, class Call, class GA, class GB, class Sizes>
void check_call(
    const Mesh& m, Call&& call, const GA& ga, const GB& gb, const Sizes& sizes, const expect& want,
    bool flops = true,
    const meshpp_test::source_location& where = meshpp_test::source_location::current()) {
  m.counters().reset();
  const auto c = call();
  using C = std::remove_cvref_t<decltype(c)>;
  static_assert(std::is_same_v<typename C::shape_type, Out>);
  const bool counters_ok =
      counted(m.counters(), want, c.local().size(), sizeof(typename C::value_type),
              meshpp_test::ranks_along(m, want.mask), flops);
  verify(counters_ok, close_to(mp::gather(c), reference<Out, SA, SB>(ga, gb, sizes)), where);
}

// check<Out>(a, b, sizes, want): einsum<Out>(a, b) of two tensors, checked as above
template <class Out, class A, class B, class Sizes>
void check(const A& a, const B& b, const Sizes& sizes, const expect& want,
           const meshpp_test::source_location& where = meshpp_test::source_location::current()) {
  check_call<Out, typename A::shape_type, typename B::shape_type>(
      a.mesh(), [&] { return mp::einsum<Out>(a, b); }, mp::gather(a), mp::gather(b), sizes, want,
      true, where);
}

// mesh_shapes(): the 2-D mesh shapes every case runs on: squarest, one row, one column
inline std::array<std::array<int, 2>, 3> mesh_shapes() {
  const int n = meshpp_test::world().size();
  return {meshpp_test::grid2(n), std::array<int, 2>{1, n}, std::array<int, 2>{n, 1}};
}

}  // namespace einsum_test
