// meshpp::environment keeps freed memory for reuse (core/environment.hpp): after it is made, a
// step that allocates, touches and frees the same large blocks again and again stops faulting
// pages in after its first two rounds. glibc's defaults trim the heap's free top past twice
// the largest block it has seen freed from an mmap, and map a block of 32 MiB or more afresh
// each time whatever the threshold, so this pattern (a 48 MiB block, an 8 MiB block, then eight
// of 4 MiB, 88 MiB in all) faults all 22 528 pages in every round without it.
#include <meshpp/core/environment.hpp>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;

namespace {

long minor_faults() {
  rusage usage{};
  REQUIRE(getrusage(RUSAGE_SELF, &usage) == 0);
  return usage.ru_minflt;
}

// one "training step": allocate the blocks, write every page, free them; the pages faulted in
long step_faults(unsigned char fill) {
  const std::size_t mib = std::size_t{1} << 20;
  const std::vector<std::size_t> sizes = {48 * mib, 8 * mib, 4 * mib, 4 * mib, 4 * mib,
                                          4 * mib,  4 * mib, 4 * mib, 4 * mib, 4 * mib};
  const long before = minor_faults();
  std::vector<void*> held;
  for (std::size_t s : sizes) {
    void* p = std::malloc(s);
    REQUIRE(p != nullptr);
    std::memset(p, fill, s);
    held.push_back(p);
  }
  for (void* p : held) std::free(p);
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("environment keeps freed memory: a repeated step stops faulting pages in") {
  const mp::environment env;  // MPI is already up (the test main's): this only tunes malloc
#if defined(__GLIBC__)
  if (std::getenv("MESHPP_SYSTEM_MALLOC") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
      std::getenv("MALLOC_MMAP_MAX_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) {
    CHECK_FALSE(env.malloc_tuned());
    return;
  }
  CHECK(env.malloc_tuned());
  const long first = step_faults(1);
  step_faults(2);
  long later = 0;
  for (unsigned char round = 3; round < 8; ++round) later += step_faults(round);
  INFO("faults: first round " << first << ", rounds 3 to 7 together " << later);
  // The 88 MiB were faulted in once (22 528 pages) and are reused after: glibc's defaults fault
  // 5 x 22 528 pages in over rounds 3 to 7, and a 32 MiB threshold alone 5 x 12 288 (the 48 MiB
  // block, mapped afresh each round). The bound leaves half a round for faults this
  // process takes that these blocks do not cause (CI once saw 1 024; NUMA balancing and Open MPI's
  // own threads can fault pages in RUSAGE_SELF counts).
  CHECK(first > 11000);
  CHECK(later < first / 2);
#else
  CHECK_FALSE(env.malloc_tuned());
#endif
}
