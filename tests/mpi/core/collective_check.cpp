// The debug mode's collective check (MESHPP_CHECK_COLLECTIVES=1, core/checked.hpp): ranks
// that call different collectives, or the same one with different counts, or skip one, get
// meshpp::error on every rank naming both sides, before any data moves, and stay in step.
// ctest runs this file with MESHPP_CHECK_COLLECTIVES=1 (and a 5 s timeout) at 2 and 4 ranks;
// the cases where a rank never arrives or dies are abort_cases.cpp's, which end the job.
#include <meshpp/comm/collectives.hpp>
#include <meshpp/comm/permute.hpp>
#include <meshpp/core/detail/checked.hpp>
#include <meshpp/core/mesh.hpp>

#include <span>
#include <string>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
using mesh_t = mp::mesh<mp::axes<rows, cols>>;

// in_step(m): a checked allreduce every rank takes part in, with the right sum
bool in_step(const mesh_t& m) {
  std::vector<int> one{1};
  mp::allreduce<mp::over<rows, cols>>::run(m, std::span(one));
  return one[0] == world().size();
}
}  // namespace

TEST_CASE("the debug mode is on, and agreeing collectives run as always") {
  REQUIRE(mp::detail::check_collectives());
  mesh_t m(meshpp_test::grid2(world().size()));
  std::vector<float> x(5, 2.0f);
  mp::allreduce<mp::over<rows, cols>>::run(m, std::span(x));
  CHECK(x[4] == 2.0f * static_cast<float>(world().size()));
  std::vector<float> all(5 * static_cast<std::size_t>(world().size()));
  mp::allgather<mp::over<rows, cols>>::run(m, std::span<const float>(x), std::span(all));
  CHECK(all.back() == x.back());
  CHECK(in_step(m));
}

TEST_CASE("a permute, whose counts are each rank's own, agrees on the call and not the counts") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const auto p = static_cast<std::size_t>(world().size());
  const auto me = static_cast<std::size_t>(m.communicator<rows, cols>().rank());
  // member i sends i + 1 values to the next member: every rank sends a different count
  const std::size_t next = (me + 1) % p, previous = (me + p - 1) % p;
  std::vector<std::size_t> send_counts(p, 0), recv_counts(p, 0);
  send_counts[next] = me + 1;
  recv_counts[previous] = previous + 1;
  std::vector<float> send(me + 1, static_cast<float>(me)), recv(previous + 1, -1.0f);
  mp::permute<mp::over<rows, cols>>::run(m, std::span<const float>(send),
                                         std::span<const std::size_t>(send_counts), std::span(recv),
                                         std::span<const std::size_t>(recv_counts));
  CHECK(recv.back() == static_cast<float>(previous));
  CHECK(in_step(m));
}

TEST_CASE("one rank calls another collective: an error on every rank naming both calls") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const int last = world().size() - 1;
  const bool odd_one = world().rank() == last;
  std::vector<float> x(4, 1.0f), all(4 * static_cast<std::size_t>(world().size()));
  const std::string mine = odd_one ? "calls allgather over [rows, cols] of 4 float"
                                   : "calls allreduce over [rows, cols] of 4 float";
  const std::string theirs =
      odd_one ? "rank 0 calls allreduce over [rows, cols] of 4 float"
              : "rank " + std::to_string(last) + " calls allgather over [rows, cols] of 4 float";
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        if (odd_one)
          mp::allgather<mp::over<rows, cols>>::run(m, std::span<const float>(x), std::span(all));
        else
          mp::allreduce<mp::over<rows, cols>>::run(m, std::span(x));
      },
      {"meshpp: collective mismatch: rank " + std::to_string(world().rank()) + " " + mine,
       theirs}));
  CHECK(x[0] == 1.0f);  // nothing moved
  CHECK(in_step(m));
}

TEST_CASE("ranks that disagree on a count: an error on every rank naming both counts") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const bool odd_one = world().rank() == world().size() - 1;
  std::vector<double> x(odd_one ? 3 : 2, 1.0);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::allreduce<mp::over<rows, cols>>::run(m, std::span(x)); },
      {"collective mismatch", "allreduce over [rows, cols] of 2 double",
       "allreduce over [rows, cols] of 3 double"}));
  CHECK(in_step(m));
}

TEST_CASE("one rank skips a collective and calls the next: an error on every rank") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const bool odd_one = world().rank() == world().size() - 1;
  std::vector<float> x(3, 1.0f);
  // the others call allreduce, then broadcast; the odd one skips the allreduce: its broadcast
  // meets their allreduce, one call earlier in the group's sequence
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        if (!odd_one) mp::allreduce<mp::over<rows, cols>>::run(m, std::span(x));
        mp::broadcast<mp::over<rows, cols>>::run(m, std::span(x), 0);
      },
      {"collective mismatch", "allreduce over [rows, cols] of 3 float",
       "broadcast over [rows, cols] of 3 float"}));
  CHECK(x[0] == 1.0f);
  CHECK(in_step(m));
}

TEST_CASE("a communicator made where one was freed starts its count of collectives afresh") {
  // MPI may give a new communicator the handle of a freed one on some ranks and not on others
  // (here: rank 0 makes a communicator of its own in between). The count of collectives each
  // rank keeps belongs to the communicator, not to its handle, so the new one's first call is
  // call 1 on every rank and the check passes.
  const int p = world().size();
  MPI_Comm first = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &first) == MPI_SUCCESS);
  int one = 1;
  mp::detail::allreduce_values(first, &one, 1, MPI_SUM, "allreduce (test)");
  mp::detail::allreduce_values(first, &one, 1, MPI_SUM, "allreduce (test)");
  CHECK(one == p * p);
  const MPI_Comm freed = first;
  REQUIRE(MPI_Comm_free(&first) == MPI_SUCCESS);
  MPI_Comm own = MPI_COMM_NULL;  // rank 0's alone: it may take the freed handle there
  if (world().rank() == 0) REQUIRE(MPI_Comm_dup(MPI_COMM_SELF, &own) == MPI_SUCCESS);
  MPI_Comm second = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &second) == MPI_SUCCESS);
  const std::string reused = second == freed ? "has" : "does not have";
  MESSAGE("rank " << world().rank() << ": the new communicator " << reused
                  << " the freed one's handle");
  int value = 1;
  bool agreed = true;
  try {
    mp::detail::allreduce_values(second, &value, 1, MPI_SUM, "allreduce (test)");
  } catch (const mp::error& e) {
    MESSAGE(e.what());
    agreed = false;
  }
  CHECK_ALL_RANKS(agreed);
  CHECK(value == p);
  REQUIRE(MPI_Comm_free(&second) == MPI_SUCCESS);
  if (own != MPI_COMM_NULL) REQUIRE(MPI_Comm_free(&own) == MPI_SUCCESS);
}
