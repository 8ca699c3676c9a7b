// meshpp/core/environment.hpp — MPI start-up and shut-down for a meshpp program.
#pragma once

#include <boost/mpi/environment.hpp>

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace meshpp {

namespace detail {

// keep_freed_memory(): glibc's malloc serves a block of 128 KiB or more with its own mmap and
// unmaps it on free (raising that threshold only as it sees such blocks freed), and returns
// the heap's free top to the system past 128 KiB. A training step makes and drops the same
// large temporaries every time (attention scores, activations, gradients), so each step would
// map, zero-fill and fault in them afresh: on the Transformer's step, 880 000 page faults and
// 3.4 times the time (bench/transformer). Blocks up to 32 MiB (glibc's largest threshold) come
// from the heap instead, and up to 1 GiB of free heap is kept for the next step. Skipped when
// the user set MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ (glibc's own variables) or
// MESHPP_SYSTEM_MALLOC; without glibc, nothing to do. Returns whether it changed anything.
inline bool keep_freed_memory() {
#if defined(__GLIBC__)
  if (std::getenv("MESHPP_SYSTEM_MALLOC") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
      std::getenv("MALLOC_TRIM_THRESHOLD_"))
    return false;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

}  // namespace detail

/// @brief Initializes MPI for the lifetime of the object (create one at the top of main).
/// An exception that escapes main aborts every rank (Boost.MPI's abort_on_exception), so a
/// failure on one rank ends the whole job instead of leaving the others waiting.
/// With glibc it also has malloc keep freed memory for reuse (detail::keep_freed_memory:
/// blocks up to 32 MiB from the heap, up to 1 GiB of free heap kept), so the temporaries every
/// training step makes are not mapped and faulted in afresh each time; set
/// MESHPP_SYSTEM_MALLOC=1 (or glibc's own MALLOC_MMAP_THRESHOLD_) to leave malloc alone.
class environment {
 public:
  environment(int& argc, char**& argv)
      : malloc_tuned_(detail::keep_freed_memory()), env_(argc, argv, /*abort_on_exception=*/true) {}
  environment() : malloc_tuned_(detail::keep_freed_memory()), env_(/*abort_on_exception=*/true) {}

  /// whether this environment set malloc to keep freed memory (see above)
  bool malloc_tuned() const { return malloc_tuned_; }

  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

 private:
  bool malloc_tuned_;
  boost::mpi::environment env_;
};

}  // namespace meshpp
