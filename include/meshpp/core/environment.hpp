// meshpp/core/environment.hpp — MPI start-up and shut-down for a meshpp program.
#pragma once

#include <mpi.h>
#include <boost/mpi/environment.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

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

// blas_kernel_advice(kernel, avx2, avx512): a warning, or nothing, for OpenBLAS running the
// kernels it calls `kernel` on a CPU with AVX2 and FMA (avx2) and AVX-512 F, BW and VL
// (avx512: what OpenBLAS's SkylakeX kernels need). A DYNAMIC_ARCH OpenBLAS (Debian's) picks
// its kernels by the CPU's model number; where it does not know the model, as on virtual
// machines that report a generic one, it falls back to kernels written before AVX2. Measured
// on such a machine (2026-11-27, OpenBLAS 0.3.21, which chose Prescott): the README's MNIST run
// took 60 s instead of 27 s with OPENBLAS_CORETYPE=SkylakeX, the Transformer step ran at a third
// of its speed, and the sums round differently. Empty for any other kernel, or without AVX2
// and FMA (the Haswell kernels need both).
inline std::string blas_kernel_advice(std::string_view kernel, bool avx2, bool avx512) {
  // OpenBLAS 0.3.21's names of its x86 kernels written before AVX2
  static constexpr std::string_view before_avx2[] = {
      "Prescott",  "Core2",       "Penryn",    "Dunnington", "Nehalem",
      "Atom",      "Nano",        "Katmai",    "Coppermine", "Northwood",
      "Banias",    "Sandybridge", "Athlon",    "Opteron",    "Opteron_SSE3",
      "Barcelona", "Bobcat",      "Bulldozer", "Piledriver", "Steamroller"};
  bool old = false;
  for (std::string_view k : before_avx2) old = old || kernel == k;
  if (!avx2 || !old) return {};
  const char* better = avx512 ? "SkylakeX" : "Haswell";
  return "meshpp: OpenBLAS runs its " + std::string(kernel) + " kernels on a CPU with " +
         (avx512 ? "AVX-512" : "AVX2") +
         " (it did not recognise the CPU's model, as on many virtual machines), so matrix "
         "products run several times slower than they can: set OPENBLAS_CORETYPE=" +
         better + " on every rank (Open MPI: mpiexec -x OPENBLAS_CORETYPE), or " +
         "MESHPP_QUIET_BLAS=1 to silence this";
}

}  // namespace detail
}  // namespace meshpp

// OpenBLAS's own query of the kernels it chose; weak, so a program linked with another BLAS
// (or with none) sees a null pointer instead of failing to link. OpenBLAS's cblas.h declares
// it too, without the weak.
// NOLINTNEXTLINE(readability-redundant-declaration)
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace meshpp {
namespace detail {

// advise_on_blas(): blas_kernel_advice for this process's OpenBLAS and CPU, printed by rank 0
// of MPI_COMM_WORLD (every rank runs the same library on the same kind of CPU, as a rule);
// nothing with another BLAS, with a static OpenBLAS (a weak reference does not pull the query
// in), off x86, or with MESHPP_QUIET_BLAS set
inline void advise_on_blas() {
#if defined(__x86_64__) || defined(__i386__)
  if (std::getenv("MESHPP_QUIET_BLAS") || !openblas_get_corename) return;
  const char* kernel = openblas_get_corename();
  if (!kernel) return;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  const std::string advice = blas_kernel_advice(kernel, avx2, avx512);
  int rank = 0;
  if (advice.empty() || MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS || rank != 0) return;
  std::fprintf(stderr, "%s\n", advice.c_str());
  std::fflush(stderr);
#endif
}

// abort_job(): the terminate handler: an exception nobody caught (or any other reason for
// std::terminate) on one rank ends the whole job with its message, through MPI_Abort, rather
// than leave the other ranks waiting in their next collective forever. (GCC does not unwind
// the stack for an exception no handler catches, so the environment's destructor, and with
// it Boost.MPI's abort_on_exception, may never run.)
[[noreturn]] inline void abort_job() noexcept {
  int rank = -1, up = 0, down = 0;
  if (MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS && !down)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* what = "std::terminate was called";
  std::string text;
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      text = x.what();
      what = text.c_str();
    } catch (...) {
      what = "an exception of unknown type";
    }
  }
  std::fprintf(stderr, "meshpp: rank %d: uncaught: %s; aborting the job\n", rank, what);
  std::fflush(stderr);
  if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace detail

/// @brief Initializes MPI for the lifetime of the object (create one at the top of main).
/// An exception that escapes main (or any std::terminate) on one rank prints its message and
/// aborts every rank (detail::abort_job, MPI_Abort), so a failure on one rank ends the whole
/// job instead of leaving the others waiting.
/// With glibc it also has malloc keep freed memory for reuse (detail::keep_freed_memory:
/// blocks up to 32 MiB from the heap, up to 1 GiB of free heap kept), so the temporaries every
/// training step makes are not mapped and faulted in afresh each time; set
/// MESHPP_SYSTEM_MALLOC=1 (or glibc's own MALLOC_MMAP_THRESHOLD_) to leave malloc alone.
/// Rank 0 warns when OpenBLAS runs kernels older than the CPU (detail::advise_on_blas).
class environment {
 public:
  environment(int& argc, char**& argv)
      : malloc_tuned_(detail::keep_freed_memory()), env_(argc, argv, /*abort_on_exception=*/true) {
    std::set_terminate(&detail::abort_job);
    detail::advise_on_blas();
  }
  environment() : malloc_tuned_(detail::keep_freed_memory()), env_(/*abort_on_exception=*/true) {
    std::set_terminate(&detail::abort_job);
    detail::advise_on_blas();
  }

  /// whether this environment set malloc to keep freed memory (see above)
  bool malloc_tuned() const { return malloc_tuned_; }

  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

 private:
  bool malloc_tuned_;
  boost::mpi::environment env_;
};

}  // namespace meshpp
