// The collective policies on a 2-D mesh: allreduce (sum, max, min), allgather, alltoall,
// reduce_scatter and broadcast over<rows>, over<cols>, over<rows, cols> and over<>; buffer
// size errors; and the counters each call records (core/counters.hpp's byte formulas).
//
// Every expected value is computed here from world ranks alone: on a mesh [rows:R, cols:C]
// rank r sits at (r / C, r % C), and the group of over<Ms...> is the ranks that share this
// rank's coordinates outside Ms, in world-rank order (which is their mesh-coordinate order).
// Runs at any rank count: meshes are built from the communicator's size.
#include <meshpp/comm/collectives.hpp>
#include <meshpp/core/counters.hpp>
#include <meshpp/core/mesh.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
using mesh_t = mp::mesh<mp::axes<rows, cols>>;

// A policy to test and the mesh dims it names, spelled independently of the library.
template <class Over, bool Rows, bool Cols>
struct policy {
  using over = Over;
  static constexpr const char* name = Rows && Cols ? "rows, cols"
                                      : Rows       ? "rows"
                                      : Cols       ? "cols"
                                                   : "no mesh dims";
  static constexpr bool over_rows = Rows;
  static constexpr bool over_cols = Cols;
  static constexpr unsigned mask = (Rows ? 1u : 0u) | (Cols ? 2u : 0u);  // bit i is axis i
};
using over_rows = policy<mp::over<rows>, true, false>;
using over_cols = policy<mp::over<cols>, false, true>;
using over_both = policy<mp::over<rows, cols>, true, true>;
using over_both_reversed = policy<mp::over<cols, rows>, true, true>;
using over_none = policy<mp::over<>, false, false>;

// The mesh shapes every case runs on: the squarest grid, one row, one column.
std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

// members<P>(shape): the world ranks of this rank's group under policy P, in group order.
template <class P>
std::vector<int> members(const std::array<int, 2>& shape) {
  const int me = world().rank();
  const int cols_n = shape[1];
  std::vector<int> out;
  for (int r = 0; r < world().size(); ++r) {
    const bool same_row = r / cols_n == me / cols_n;
    const bool same_col = r % cols_n == me % cols_n;
    if ((P::over_rows || same_row) && (P::over_cols || same_col)) out.push_back(r);
  }
  return out;
}

// index_in(group): this rank's place in its group
int index_in(const std::vector<int>& group) {
  for (std::size_t j = 0; j < group.size(); ++j) {
    if (group[j] == world().rank()) return static_cast<int>(j);
  }
  return -1;
}

// What world rank r contributes at position e: distinct, and ordered neither by rank nor by
// position, so max and min are not simply the last or first member.
template <class T>
T value_of(int r, std::size_t e) {
  return static_cast<T>((r * 37 + static_cast<int>(e) * 11) % 23 - 7);
}
// What rank r sends to the member at `to`, at position e of that block.
template <class T>
T message(int r, int to, std::size_t e) {
  return static_cast<T>(r * 1000 + to * 10 + static_cast<int>(e));
}

template <class T, class V>
bool equal(const std::vector<T>& got, const V& expected) {
  if (got.size() != expected.size()) return false;
  for (std::size_t e = 0; e < got.size(); ++e) {
    if (got[e] != static_cast<T>(expected[e])) return false;
  }
  return true;
}

// verify(ok, what, over): the one assertion of every templated check below; not a template
// itself, so no policy or element type instantiates assertion code of its own
void verify(bool ok, const char* what, const char* over) {
  INFO(what << " over " << over);
  CHECK_ALL_RANKS(ok);
}

constexpr std::size_t n_values = 6;

template <class T, class P, class Op>
void check_allreduce(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  std::vector<T> data(n_values);
  for (std::size_t e = 0; e < n_values; ++e) data[e] = value_of<T>(world().rank(), e);
  std::vector<T> expected(n_values);
  for (std::size_t e = 0; e < n_values; ++e) {
    T acc = value_of<T>(group[0], e);
    for (std::size_t j = 1; j < group.size(); ++j) {
      const T v = value_of<T>(group[j], e);
      if constexpr (std::is_same_v<Op, mp::op::sum>)
        acc += v;
      else if constexpr (std::is_same_v<Op, mp::op::max>)
        acc = v > acc ? v : acc;
      else
        acc = v < acc ? v : acc;
    }
    expected[e] = acc;
  }
  mp::allreduce<typename P::over, Op>::run(m, std::span<T>(data));
  verify(equal(data, expected), "allreduce", P::name);
}

template <class T, class P>
void check_allgather(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  constexpr std::size_t block = 3;
  std::vector<T> in(block);
  for (std::size_t e = 0; e < block; ++e) in[e] = value_of<T>(world().rank(), e);
  std::vector<T> out(block * group.size(), T(-99));
  std::vector<T> expected;
  for (int r : group) {
    for (std::size_t e = 0; e < block; ++e) expected.push_back(value_of<T>(r, e));
  }
  mp::allgather<typename P::over>::run(m, std::span<const T>(in), std::span<T>(out));
  verify(equal(out, expected), "allgather", P::name);
}

template <class T, class P>
void check_alltoall(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  const int me = index_in(group);
  constexpr std::size_t block = 2;
  std::vector<T> in, expected;
  for (std::size_t j = 0; j < group.size(); ++j) {
    for (std::size_t e = 0; e < block; ++e) {
      in.push_back(message<T>(world().rank(), static_cast<int>(j), e));
      expected.push_back(message<T>(group[j], me, e));  // member j's block for me
    }
  }
  std::vector<T> out(in.size(), T(-99));
  mp::alltoall<typename P::over>::run(m, std::span<const T>(in), std::span<T>(out));
  verify(equal(out, expected), "alltoall", P::name);
}

template <class T, class P, class Op>
void check_reduce_scatter(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  const int me = index_in(group);
  constexpr std::size_t block = 2;
  std::vector<T> in;
  for (std::size_t j = 0; j < group.size(); ++j) {
    for (std::size_t e = 0; e < block; ++e) {
      in.push_back(value_of<T>(world().rank() + static_cast<int>(j) * 5, e));
    }
  }
  std::vector<T> expected(block);
  for (std::size_t e = 0; e < block; ++e) {
    T acc = value_of<T>(group[0] + me * 5, e);
    for (std::size_t i = 1; i < group.size(); ++i) {
      const T v = value_of<T>(group[i] + me * 5, e);  // member i's block `me`
      if constexpr (std::is_same_v<Op, mp::op::sum>)
        acc += v;
      else
        acc = v > acc ? v : acc;
    }
    expected[e] = acc;
  }
  std::vector<T> out(block, T(-99));
  mp::reduce_scatter<typename P::over, Op>::run(m, std::span<const T>(in), std::span<T>(out));
  verify(equal(out, expected), "reduce_scatter", P::name);
}

template <class T, class P>
void check_broadcast(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  for (int root = 0; root < static_cast<int>(group.size()); ++root) {
    CAPTURE(root);
    std::vector<T> data(n_values), expected(n_values);
    for (std::size_t e = 0; e < n_values; ++e) {
      data[e] = value_of<T>(world().rank(), e);
      expected[e] = value_of<T>(group[static_cast<std::size_t>(root)], e);
    }
    mp::broadcast<typename P::over>::run(m, std::span<T>(data), root);
    verify(equal(data, expected), "broadcast", P::name);
  }
}

template <class T, class P>
void check_every_collective() {
  for (const auto& shape : mesh_shapes()) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    const mesh_t m(shape);
    check_allreduce<T, P, mp::op::sum>(m, shape);
    check_allreduce<T, P, mp::op::max>(m, shape);
    check_allreduce<T, P, mp::op::min>(m, shape);
    check_allgather<T, P>(m, shape);
    check_alltoall<T, P>(m, shape);
    check_reduce_scatter<T, P, mp::op::sum>(m, shape);
    check_reduce_scatter<T, P, mp::op::max>(m, shape);
    {  // the same through MPI_Reduce_scatter_block, the call for inputs of 32 MiB and more (for
       // what the ring does not take: max, int; sums of float and double at more than 2 members)
      const auto from = mp::detail::reduce_scatter_block_from;
      mp::detail::reduce_scatter_block_from = 0;
      check_reduce_scatter<T, P, mp::op::sum>(m, shape);
      check_reduce_scatter<T, P, mp::op::max>(m, shape);
      mp::detail::reduce_scatter_block_from = from;
    }
    {  // sums of float and double by the ring at every group size (2 members: always)
      const auto from = mp::detail::reduce_scatter_ring_from;
      mp::detail::reduce_scatter_ring_from = 0;
      check_reduce_scatter<T, P, mp::op::sum>(m, shape);
      mp::detail::reduce_scatter_ring_from = from;
    }
    check_broadcast<T, P>(m, shape);
  }
}

// The counts recorded for one (collective, mask) equal {calls, values, bytes}, and every
// other (collective, mask) pair is zero.
bool only_count(const mesh_t& m, mp::collective c, unsigned mask, mp::collective_count want) {
  for (std::size_t kind = 0; kind < mp::collective_kinds; ++kind) {
    for (unsigned mk = 0; mk < 4; ++mk) {
      const auto& got = m.counters().at(static_cast<mp::collective>(kind), mk);
      const bool here = static_cast<mp::collective>(kind) == c && mk == mask;
      const mp::collective_count expected = here ? want : mp::collective_count{};
      if (got.calls != expected.calls || got.values != expected.values ||
          got.bytes_sent != expected.bytes_sent) {
        MESSAGE("rank " << world().rank() << ": " << mp::collective_name(c) << " mask " << mk
                        << " counted " << got.calls << " calls, " << got.values << " values, "
                        << got.bytes_sent << " bytes; expected " << expected.calls << ", "
                        << expected.values << ", " << expected.bytes_sent);
        return false;
      }
    }
  }
  return true;
}

bool all_zero(const mesh_t& m) {
  for (std::size_t kind = 0; kind < mp::collective_kinds; ++kind) {
    const auto t = m.counters().total(static_cast<mp::collective>(kind));
    if (t.calls != 0 || t.values != 0 || t.bytes_sent != 0) return false;
  }
  return m.counters().einsum_calls() == 0 && m.counters().einsum_flops() == 0;
}

// has_row(report, kind, over, calls, values): the report has a row "kind over calls values ..."
bool has_row(const std::string& report, std::string_view kind, std::string_view over,
             std::uint64_t calls, std::uint64_t values) {
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string k, o;
    std::uint64_t c = 0, v = 0;
    if (words >> k >> o >> c >> v && k == kind && o == over && c == calls && v == values) {
      return true;
    }
  }
  return false;
}

template <class T, class P>
void check_counters(const mesh_t& m, const std::array<int, 2>& shape) {
  const auto group = members<P>(shape);
  const std::uint64_t p = group.size();
  const std::uint64_t s = sizeof(T);
  const int me = index_in(group);
  // only_count of one call over P's group; a group of one rank counts nothing
  const auto counted = [&](mp::collective c, mp::collective_count want) {
    return p == 1 ? all_zero(m) : only_count(m, c, P::mask, want);
  };

  // allreduce: n values, 2(p-1)/p * n * s bytes; over no mesh dims: not counted at all
  m.counters().reset();
  std::vector<T> data(n_values * p, T(1));  // n * s divisible by p: the formula is exact
  const std::uint64_t n = data.size();
  mp::allreduce<typename P::over>::run(m, std::span<T>(data));
  if constexpr (P::mask == 0) {
    verify(all_zero(m), "counters of an allreduce", P::name);
  } else {
    verify(counted(mp::collective::allreduce, {1, n, 2 * (p - 1) * n * s / p}),
           "counters of allreduce", P::name);
    mp::allreduce<typename P::over, mp::op::max>::run(m, std::span<T>(data));
    verify(counted(mp::collective::allreduce, {2, 2 * n, 4 * (p - 1) * n * s / p}),
           "counters of allreduce", P::name);
  }

  // allgather: n values in, (p-1) * n * s bytes
  m.counters().reset();
  std::vector<T> in(n_values, T(1)), out(n_values * p);
  mp::allgather<typename P::over>::run(m, std::span<const T>(in), std::span<T>(out));
  verify(counted(mp::collective::allgather, {1, n_values, (p - 1) * n_values * s}),
         "counters of allgather", P::name);

  // alltoall: n values, (p-1)/p * n * s bytes
  m.counters().reset();
  std::vector<T> a(n, T(1)), b(n);
  mp::alltoall<typename P::over>::run(m, std::span<const T>(a), std::span<T>(b));
  verify(counted(mp::collective::alltoall, {1, n, (p - 1) * n * s / p}), "counters of alltoall",
         P::name);

  // reduce_scatter: n values in, (p-1)/p * n * s bytes
  m.counters().reset();
  std::vector<T> block(n / p);
  mp::reduce_scatter<typename P::over>::run(m, std::span<const T>(a), std::span<T>(block));
  verify(counted(mp::collective::reduce_scatter, {1, n, (p - 1) * n * s / p}),
         "counters of reduce_scatter", P::name);

  // broadcast: n values; n * s bytes sent by the root, none by the others or in a group of 1
  for (int root = 0; root < static_cast<int>(p); ++root) {
    m.counters().reset();
    mp::broadcast<typename P::over>::run(m, std::span<T>(data), root);
    const std::uint64_t sent = (me == root && p > 1) ? n * s : 0;
    verify(counted(mp::collective::broadcast, {1, n, sent}), "counters of broadcast", P::name);
  }
  m.counters().reset();
}
}  // namespace

TEST_CASE_TEMPLATE("every collective over every set of mesh dims, double", P, over_rows, over_cols,
                   over_both, over_both_reversed, over_none) {
  check_every_collective<double, P>();
}

TEST_CASE_TEMPLATE("every collective over every set of mesh dims, int", P, over_rows, over_both,
                   over_none) {
  check_every_collective<int, P>();
}

TEST_CASE_TEMPLATE("every collective over every set of mesh dims, float", P, over_cols) {
  check_every_collective<float, P>();
}

TEST_CASE("the groups are the ones the test expects: sizes and member order") {
  // A sanity check of members<>() against the mesh's own communicators, so that a mistake
  // in the test's reference could not hide a mistake in the library (or the reverse).
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    const auto check = [&]<class P>(P*, const boost::mpi::communicator& comm) {
      const auto group = members<P>(shape);
      return comm.size() == static_cast<int>(group.size()) && comm.rank() == index_in(group);
    };
    CHECK_ALL_RANKS(check(static_cast<over_rows*>(nullptr), m.communicator<rows>()));
    CHECK_ALL_RANKS(check(static_cast<over_cols*>(nullptr), m.communicator<cols>()));
    CHECK_ALL_RANKS(check(static_cast<over_both*>(nullptr), m.communicator<rows, cols>()));
    CHECK_ALL_RANKS(check(static_cast<over_none*>(nullptr), m.communicator<>()));
  }
}

TEST_CASE("buffer size mismatches throw meshpp::error on every rank, before communicating") {
  const int n = world().size();
  const mesh_t m(std::array<int, 2>{1, n});
  const std::size_t p = static_cast<std::size_t>(n);  // the group of over<cols>
  using over = mp::over<cols>;
  std::vector<double> in(4, 1.0), out(4 * p + 1);
  m.counters().reset();

  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::allgather<over>::run(m, std::span<const double>(in), std::span<double>(out)); },
      {"meshpp::allgather: the output holds " + std::to_string(4 * p + 1),
       "needs " + std::to_string(4 * p)}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        mp::allgather<over>::run(m, std::span<const double>(in),
                                 std::span<double>(out).first(4 * p - 1));
      },
      {"meshpp::allgather"}));

  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        mp::alltoall<over>::run(m, std::span<const double>(in), std::span<double>(out).first(3));
      },
      {"meshpp::alltoall: input and output must hold the same number of values"}));
  if (p > 1) {  // a group of 1 divides every size
    std::vector<double> odd(4 * p + 1, 1.0);
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { mp::alltoall<over>::run(m, std::span<const double>(odd), std::span<double>(out)); },
        {"meshpp::alltoall", "multiple of the group size " + std::to_string(p)}));
  }

  std::vector<double> big(4 * p, 1.0), small(3);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        mp::reduce_scatter<over>::run(m, std::span<const double>(big), std::span<double>(small));
      },
      {"meshpp::reduce_scatter: the input holds " + std::to_string(4 * p), "blocks of 3"}));

  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::broadcast<over>::run(m, std::span<double>(in), n); },
      {"meshpp::broadcast: root " + std::to_string(n) + " is not a member of the group of " +
       std::to_string(n)}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::broadcast<over>::run(m, std::span<double>(in), -1); }, {"root -1"}));

  // nothing was counted, and the ranks are still in step
  CHECK_ALL_RANKS(all_zero(m));
  std::vector<double> one{1.0};
  mp::allreduce<mp::over<rows, cols>>::run(m, std::span<double>(one));
  CHECK_ALL_RANKS(one[0] == n);
}

TEST_CASE("counters record calls, values and bytes per collective and mesh dims") {
  for (const auto& shape : mesh_shapes()) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    const mesh_t m(shape);
    check_counters<double, over_rows>(m, shape);
    check_counters<double, over_cols>(m, shape);
    check_counters<double, over_both>(m, shape);
    check_counters<double, over_none>(m, shape);
    check_counters<float, over_both>(m, shape);  // 4-byte values
    check_counters<int, over_rows>(m, shape);
  }
}

TEST_CASE("a collective over a group of one rank moves nothing and counts nothing") {
  const int n = world().size();
  const mesh_t m(std::array<int, 2>{1, n});  // rows has size 1
  std::vector<double> data(8, 1.0), out(8);
  m.counters().reset();
  m.counters().by_operation(true);
  mp::allreduce<mp::over<rows>>::run(m, std::span<double>(data));
  CHECK_ALL_RANKS(data == std::vector<double>(8, 1.0));
  mp::allgather<mp::over<rows>>::run(m, std::span<const double>(data), std::span<double>(out));
  CHECK_ALL_RANKS(out == data);
  mp::alltoall<mp::over<rows>>::run(m, std::span<const double>(data), std::span<double>(out));
  CHECK_ALL_RANKS(out == data);
  mp::reduce_scatter<mp::over<rows>>::run(m, std::span<const double>(data), std::span<double>(out));
  CHECK_ALL_RANKS(out == data);
  mp::broadcast<mp::over<rows>>::run(m, std::span<double>(data), 0);
  CHECK_ALL_RANKS(all_zero(m));
  // by operation, each call is listed (its kind and mesh dims) with zero counts: a plan made on
  // one rank still shows where its operations communicate
  const auto& ops = m.counters().operations();
  CHECK_ALL_RANKS(ops.size() == 1);
  if (ops.size() == 1) {
    const auto& listed = ops.front().collectives;
    CHECK_ALL_RANKS(listed.size() == 5);
    bool zero = true;
    for (const auto& e : listed) zero = zero && e.mask == 1u && e.count == mp::collective_count{};
    CHECK_ALL_RANKS(zero);
  }
  m.counters().by_operation(false);

  // over<>: an allreduce is not a collective at all (not listed); the others are, over a group
  // of one, and count nothing
  m.counters().reset();
  mp::allreduce<mp::over<>>::run(m, std::span<double>(data));
  mp::allgather<mp::over<>>::run(m, std::span<const double>(data), std::span<double>(out));
  CHECK_ALL_RANKS(all_zero(m));
  // and a group of more than one rank counts as before
  if (n > 1) {
    mp::allreduce<mp::over<cols>>::run(m, std::span<double>(data));
    CHECK_ALL_RANKS(only_count(m, mp::collective::allreduce, 2u,
                               {1, 8, 2 * (static_cast<std::uint64_t>(n) - 1) * 8 * 8 / n}));
  }
}

TEST_CASE("counters are shared by copies of a mesh, and reset zeroes everything") {
  const int n = world().size();
  const mesh_t m(meshpp_test::grid2(n));
  const mesh_t copy = m;
  m.counters().reset();
  std::vector<int> data(4 * static_cast<std::size_t>(n), 1), out(4);
  mp::allreduce<mp::over<rows>>::run(copy, std::span<int>(data));
  mp::allreduce<mp::over<cols>>::run(copy, std::span<int>(data));
  mp::reduce_scatter<mp::over<rows, cols>>::run(copy, std::span<const int>(data),
                                                std::span<int>(out));
  m.counters().record_einsum(12);
  // a group of one rank counts nothing
  const std::uint64_t over_rows = m.counters().group_of_one(1u) ? 0 : 1;
  const std::uint64_t over_cols = m.counters().group_of_one(2u) ? 0 : 1;
  const std::uint64_t over_both = m.counters().group_of_one(3u) ? 0 : 1;
  CHECK_ALL_RANKS(m.counters().at(mp::collective::allreduce, 1u).calls == over_rows);
  CHECK_ALL_RANKS(m.counters().at(mp::collective::allreduce, 2u).calls == over_cols);
  CHECK_ALL_RANKS(m.counters().total(mp::collective::allreduce).calls == over_rows + over_cols);
  CHECK_ALL_RANKS(m.counters().values(mp::collective::allreduce) ==
                  (over_rows + over_cols) * 4u * n);
  CHECK_ALL_RANKS(m.counters().at(mp::collective::reduce_scatter, 3u).values == over_both * 4u * n);
  CHECK_ALL_RANKS(m.counters().einsum_calls() == 1 && m.counters().einsum_flops() == 12);
  CHECK_ALL_RANKS(!all_zero(m));

  // a mesh of its own has counters of its own
  const mesh_t other(meshpp_test::grid2(n));
  CHECK_ALL_RANKS(all_zero(other));

  copy.counters().reset();
  CHECK_ALL_RANKS(all_zero(m));
  for (std::size_t kind = 0; kind < mp::collective_kinds; ++kind) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      const auto& c = m.counters().at(static_cast<mp::collective>(kind), mask);
      CHECK_ALL_RANKS(c.calls == 0 && c.values == 0 && c.bytes_sent == 0);
    }
  }
}

TEST_CASE("report names each collective used and the mesh dims it ran over") {
  const int n = world().size();
  const mesh_t m(meshpp_test::grid2(n));
  m.counters().reset();
  const std::string empty = m.counters().report();
  for (const char* word : {"allreduce", "allgather", "alltoall", "reduce_scatter", "broadcast"}) {
    CHECK_ALL_RANKS(empty.find(word) == std::string::npos);  // only the header and einsum
  }

  std::vector<double> data(4 * static_cast<std::size_t>(n), 1.0), out(4 * data.size());
  mp::allreduce<mp::over<rows>>::run(m, std::span<double>(data));
  mp::allgather<mp::over<cols>>::run(
      m, std::span<const double>(data).first(4),
      std::span<double>(out).first(4 * static_cast<std::size_t>(m.size<cols>())));
  mp::broadcast<mp::over<rows, cols>>::run(m, std::span<double>(data), 0);
  mp::alltoall<mp::over<>>::run(m, std::span<const double>(data),
                                std::span<double>(out).first(data.size()));
  m.counters().record_einsum(1000);
  const std::string report = m.counters().report();
  CAPTURE(report);
  // a group of one rank counts nothing, so it has no row (the alltoall over no mesh dims never)
  CHECK_ALL_RANKS(has_row(report, "allreduce", "rows", 1, 4u * n) ==
                  !m.counters().group_of_one(1u));
  CHECK_ALL_RANKS(has_row(report, "allgather", "cols", 1, 4) == !m.counters().group_of_one(2u));
  CHECK_ALL_RANKS(has_row(report, "broadcast", "rows,cols", 1, 4u * n) ==
                  !m.counters().group_of_one(3u));
  CHECK_ALL_RANKS(report.find("alltoall") == std::string::npos);
  CHECK_ALL_RANKS(report.find("reduce_scatter") == std::string::npos);
  CHECK_ALL_RANKS(report.find("einsum: 1 calls, 1000 local flops") != std::string::npos);
  m.counters().reset();
  CHECK_ALL_RANKS(m.counters().report() == empty);
}

// A type SIMD batches do not take (long double) still compiles and sums through MPI's call.
TEST_CASE("reduce_scatter of long double sums through MPI") {
  using line_t = mp::mesh<mp::axes<rows, cols>>;
  const int n = world().size();
  const line_t m({1, n});
  const auto p = static_cast<std::size_t>(n);
  std::vector<long double> in(3 * p, static_cast<long double>(world().rank() + 1)), out(3, -1);
  mp::reduce_scatter<mp::over<cols>>::run(m, std::span<const long double>(in),
                                          std::span<long double>(out));
  bool summed = true;
  for (const long double v : out) summed = summed && v == static_cast<long double>(n * (n + 1) / 2);
  CHECK_ALL_RANKS(summed);
}

// Blocks of different sizes (run_blocks: a dim split unevenly), over the group of all ranks
// on a line: member j's block holds 5 (j % 3) values (so some are empty), the counters record
// what the even forms would for equal blocks, and with mpi_count_limit lowered to 2 the paths
// past MPI's int (point-to-point messages, one MPI_Reduce per block in pieces, the
// reduce_scatter ring's messages in pieces, some empty) give the same.
TEST_CASE("allgather, alltoall and reduce_scatter of blocks of their own sizes") {
  using line_t = mp::mesh<mp::axes<rows, cols>>;
  const int n = world().size();
  const line_t m({1, n});
  const auto p = static_cast<std::size_t>(n), me = static_cast<std::size_t>(world().rank());
  auto size_of = [](std::size_t j) { return 5 * (j % 3); };
  std::vector<std::size_t> counts(p);
  for (std::size_t j = 0; j < p; ++j) counts[j] = size_of(j);
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  const std::size_t old_limit = mp::detail::mpi_count_limit;
  for (const std::size_t limit : {old_limit, std::size_t{2}}) {
    CAPTURE(limit);
    mp::detail::mpi_count_limit = limit;
    m.counters().reset();
    // allgather: member j's values are 100 j + i
    std::vector<double> mine(size_of(me)), all(total);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = 100.0 * double(me) + double(i);
    mp::allgather<mp::over<cols>>::run_blocks(m, std::span<const double>(mine),
                                              std::span<double>(all),
                                              std::span<const std::size_t>(counts));
    bool gathered = true;
    for (std::size_t j = 0, at = 0; j < p; at += counts[j], ++j)
      for (std::size_t i = 0; i < counts[j]; ++i)
        gathered = gathered && all[at + i] == 100.0 * double(j) + double(i);
    CHECK_ALL_RANKS(gathered);
    const auto ag = m.counters().total(mp::collective::allgather);
    // a group of one rank counts nothing
    const std::uint64_t one = p > 1 ? 1 : 0;
    CHECK_ALL_RANKS(ag.calls == one && ag.values == one * mine.size() &&
                    ag.bytes_sent == (total - mine.size()) * sizeof(double));

    // alltoall: member i sends (i + j) % 3 values 1000 i + 10 j + t to member j
    std::vector<std::size_t> send_counts(p), recv_counts(p);
    for (std::size_t j = 0; j < p; ++j) {
      send_counts[j] = (me + j) % 3;
      recv_counts[j] = (j + me) % 3;
    }
    std::vector<double> send, recv;
    for (std::size_t j = 0; j < p; ++j)
      for (std::size_t t = 0; t < send_counts[j]; ++t)
        send.push_back(1000.0 * double(me) + 10.0 * double(j) + double(t));
    recv.resize(send.size());  // (i + j) % 3 both ways: as many in as out
    mp::alltoall<mp::over<cols>>::run_blocks(
        m, std::span<const double>(send), std::span<const std::size_t>(send_counts),
        std::span<double>(recv), std::span<const std::size_t>(recv_counts));
    bool exchanged = true;
    for (std::size_t j = 0, at = 0; j < p; at += recv_counts[j], ++j)
      for (std::size_t t = 0; t < recv_counts[j]; ++t)
        exchanged = exchanged && recv[at + t] == 1000.0 * double(j) + 10.0 * double(me) + double(t);
    CHECK_ALL_RANKS(exchanged);
    const auto aa = m.counters().total(mp::collective::alltoall);
    CHECK_ALL_RANKS(aa.calls == one && aa.values == one * send.size() &&
                    aa.bytes_sent == (send.size() - send_counts[me]) * sizeof(double));

    // reduce_scatter: member i's input is 1 + i + v at every position v of all blocks; block j
    // goes to member j, summed: n (1 + v) + n (n - 1) / 2; through MPI_Reduce_scatter and
    // through the ring (2 members: the ring both times)
    std::vector<double> in(total), out(size_of(me));
    for (std::size_t v = 0; v < total; ++v) in[v] = 1.0 + double(me) + double(v);
    const std::size_t ring_from = mp::detail::reduce_scatter_ring_from;
    for (const std::size_t from : {ring_from, std::size_t{0}}) {
      CAPTURE(from);
      mp::detail::reduce_scatter_ring_from = from;
      m.counters().reset();
      std::fill(out.begin(), out.end(), -1.0);
      mp::reduce_scatter<mp::over<cols>>::run_blocks(m, std::span<const double>(in),
                                                     std::span<double>(out),
                                                     std::span<const std::size_t>(counts));
      mp::detail::reduce_scatter_ring_from = ring_from;
      std::size_t first = 0;
      for (std::size_t j = 0; j < me; ++j) first += counts[j];
      bool reduced = true;
      for (std::size_t i = 0; i < out.size(); ++i)
        reduced = reduced &&
                  out[i] == double(n) * (1.0 + double(first + i)) + double(n) * double(n - 1) / 2.0;
      CHECK_ALL_RANKS(reduced);
      const auto rs = m.counters().total(mp::collective::reduce_scatter);
      CHECK_ALL_RANKS(rs.calls == one && rs.values == one * total &&
                      rs.bytes_sent == (total - out.size()) * sizeof(double));
    }

    // counts that do not fit the buffers: an error on every rank, nothing moved
    std::vector<double> short_out(total + 1);
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] {
          mp::allgather<mp::over<cols>>::run_blocks(m, std::span<const double>(mine),
                                                    std::span<double>(short_out),
                                                    std::span<const std::size_t>(counts));
        },
        {"meshpp::allgather: the buffers hold"}));
  }
  mp::detail::mpi_count_limit = old_limit;
}
