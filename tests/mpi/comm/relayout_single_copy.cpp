// Relayouts among the ranks of one node copy each block straight from its sender's memory to its
// receiver's (comm/single_copy.hpp): one copy, whatever the strides. Checked here, on the meshes
// and uneven sizes of uneven_fixture.hpp, bit for bit against the single-rank reference, with
// the direct copies on and off:
//   - the alltoalls [i/c] <-> [j/c] and [i/r] -> [j/r] of [i, j, k] (blocks strided on one side)
//     and [i/c] -> [j/c] of [k, i, j] (strided on both), and the cycle;
//   - which path ran: with the copies on, one direct step per alltoall over a group of more
//     than one rank, exactly where the group can reach its members' memory (on one Linux node
//     without ptrace restrictions, it must); with them off, none;
//   - a failed copy on one rank: every rank falls back to MPI for that call (the result still
//     exact), and the group does not copy directly again.
// The relayout tests (relayout*.cpp, uneven_movement.cpp) run the direct path by default, and
// the MPI path with small pieces and with the direct copies turned off.
#include <meshpp/comm/single_copy.hpp>

#include "../ops/uneven_fixture.hpp"
#include "small_pieces.hpp"

#include <fstream>

#if defined(__linux__)
#include <unistd.h>
#endif

using namespace uneven;

namespace single_copy_test {
using index3 = std::array<std::size_t, 3>;

constexpr unsigned over_r = 1u, over_c = 2u;  // mesh_t's masks

// whether the group of mesh dims `mask` copies among its members directly (the probe, collective on
// first use: every rank asks for its own group)
bool copies_directly(const mesh_t& m, unsigned mask) {
  const auto& comm = m.communicator(mask);
  if (comm.size() == 1) return false;
  const mp::detail::call_site site{"test", mask};
  return mp::detail::single_copy_peers(MPI_Comm(comm), site).usable();
}

// whether the direct copies must work here: Linux, every rank on this node, reading this
// process's own memory allowed, Yama's ptrace_scope absent or 0 (1 or more may forbid sibling
// processes to read each other), and not turned off
bool expected_here() {
#if defined(__linux__)
  const char* env = std::getenv("MESHPP_SINGLE_COPY");
  if (env && std::string_view(env) == "0") return false;
  if (std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope"); scope) {
    int level = 0;
    if (!(scope >> level) || level != 0) return false;
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 0;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  const int token = 42;
  int seen = 0;
  mp::detail::remote_copy self(getpid(), mp::detail::remote_copy::read);
  self.add(&seen, reinterpret_cast<std::uintptr_t>(&token), sizeof seen);
  return on_node == world().size() && self.flush() && seen == token;
#else
  return false;
#endif
}

// the alltoall relayouts, each checked bit for bit; returns the alltoalls over groups of more
// than one rank that could copy directly
std::size_t alltoalls(const mesh_t& m, const sizes3& s) {
  const auto G = reference_input(index3{s.i, s.j, s.k}, 21);
  const auto K = reference_input(index3{s.k, s.i, s.j}, 22);
  const auto sizes = extents_of(s);
  const auto a = mp::scatter<tensor_t<i_c, double, i, j, k>>(m, sizes, G);
  check("[i/c, j, k] -> [i, j/c, k]", mp::relayout<j_c>(a), G, 0.0);
  const auto b = mp::scatter<tensor_t<j_c, double, i, j, k>>(m, sizes, G);
  check("[i, j/c, k] -> [i/c, j, k]", mp::relayout<i_c>(b), G, 0.0);
  const auto c = mp::scatter<tensor_t<i_r, double, i, j, k>>(m, sizes, G);
  check("[i/r, j, k] -> [i, j/r, k]", mp::relayout<j_r>(c), G, 0.0);
  const auto d = mp::scatter<tensor_t<i_c, double, k, i, j>>(m, sizes, K);
  check("[k, i/c, j] -> [k, i, j/c]", mp::relayout<j_c>(d), K, 0.0);
  return 3 * copies_directly(m, over_c) + copies_directly(m, over_r);
}
}  // namespace single_copy_test

TEST_CASE("relayout: direct copies among one node's ranks give the MPI path's bits") {
  using namespace single_copy_test;
  const bool expected = expected_here();
  on_every_case([&](const mesh_t& m, const sizes3& s) {
    CAPTURE(m.describe());
    for (const bool on : {true, false}) {
      CAPTURE(on);
      const meshpp_test::direct_copies mode(on);
      const std::size_t before = mp::detail::single_copy_steps;
      const std::size_t direct = alltoalls(m, s);
      CHECK(mp::detail::single_copy_steps - before == (on ? direct : 0));
      if (expected) {  // every group of more than one rank copies directly here
        CHECK(copies_directly(m, over_c) == (m.communicator(over_c).size() > 1));
        CHECK(copies_directly(m, over_r) == (m.communicator(over_r).size() > 1));
      }
      // the cycle (its mesh dims' order is relayout.hpp's to choose): the bits alone
      const auto G = reference_input(std::array<std::size_t, 3>{s.i, s.j, s.k}, 23);
      const auto t = mp::scatter<tensor_t<i_r_j_c, double, i, j, k>>(m, extents_of(s), G);
      check("the cycle [i/r, j/c, k] -> [i/c, j/r, k]", mp::relayout<i_c_j_r>(t), G, 0.0);
    }
  });
}

namespace single_copy_test {
// fail_copies guard(on): this rank's direct copies fail until the guard goes
class fail_copies {
 public:
  explicit fail_copies(bool on) { mp::detail::single_copy_fail_copies = on; }
  ~fail_copies() { mp::detail::single_copy_fail_copies = false; }
  fail_copies(const fail_copies&) = delete;
  fail_copies& operator=(const fail_copies&) = delete;
};
}  // namespace single_copy_test

TEST_CASE("relayout: a failed direct copy on one rank falls back to MPI on every rank") {
  using namespace single_copy_test;
  const int n = world().size();
  const mesh_t m(
      std::array<int, 2>{1, n});  // a mesh of its own: the group it gives up on is no other test's
  if (!copies_directly(m, over_c)) {
    MESSAGE("no direct copies here (one rank, several nodes, or not permitted): nothing to fail");
    return;
  }
  const sizes3 s{s13, s7, s7};
  const std::size_t before = mp::detail::single_copy_steps;
  CHECK(alltoalls(m, s) == 3);  // copies directly: the three alltoalls over c
  CHECK(mp::detail::single_copy_steps - before == 3);
  {
    const auto G = reference_input(std::array<std::size_t, 3>{s.i, s.j, s.k}, 24);
    const auto a = mp::scatter<tensor_t<i_c, double, i, j, k>>(m, extents_of(s), G);
    const auto b = [&] {
      const fail_copies failing(world().rank() == 0);
      return mp::relayout<j_c>(a);
    }();
    check("[i/c] -> [j/c] after a failed copy on rank 0", b, G, 0.0);
  }
  CHECK(mp::detail::single_copy_steps - before == 3);  // the MPI path ran on every rank
  CHECK_FALSE(copies_directly(m, over_c));             // and the group gave up copying
  CHECK(alltoalls(m, s) == 0);
  CHECK(mp::detail::single_copy_steps - before == 3);
}
