// meshpp/core/environment.hpp — MPI start-up and shut-down for a meshpp program.
#pragma once

#include <mpi.h>
#include <boost/mpi/environment.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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
// 3.4 times the time (bench/transformer). Blocks of every size come from the heap instead
// (M_MMAP_MAX 0: no block gets a mapping of its own, so no mmap threshold applies; a threshold
// alone stops at 32 MiB, glibc's largest, and 64 MiB results would be mapped and faulted in
// afresh on every call: 0.14 to 0.44 s of a 0.75 s distributed product), and up to 1 GiB of
// free heap is kept for the next step (memory freed below a block still in use
// stays with the process until malloc reuses it: MESHPP_SYSTEM_MALLOC=1 for a program that
// wants large transient blocks given back at once). Skipped when the user set
// MALLOC_MMAP_THRESHOLD_, MALLOC_MMAP_MAX_ or MALLOC_TRIM_THRESHOLD_ (glibc's own variables) or
// MESHPP_SYSTEM_MALLOC; without glibc, nothing to do. Returns whether it changed anything.
inline bool keep_freed_memory() {
#if defined(__GLIBC__)
  if (std::getenv("MESHPP_SYSTEM_MALLOC") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
      std::getenv("MALLOC_MMAP_MAX_") || std::getenv("MALLOC_TRIM_THRESHOLD_"))
    return false;
  const bool mmap_ok = mallopt(M_MMAP_MAX, 0) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

// better_blas_kernels(kernel, avx2, avx512): the OpenBLAS kernels to run instead of those it
// calls `kernel`, or nothing. `avx2`: the CPU has AVX2 and FMA (what OpenBLAS's Haswell
// kernels need); `avx512`: it also has AVX-512 F, BW and VL (what its SkylakeX kernels need).
// A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels by the CPU's model number; on a model it
// does not know, one newer than itself, it may fall back to kernels written before AVX2, with
// which the Fashion-MNIST example takes twice as long and the Transformer's step three times
// (docs/building.md, BLAS kernels). Nothing for any other kernel, or without AVX2 and FMA.
inline std::string_view better_blas_kernels(std::string_view kernel, bool avx2, bool avx512) {
  // OpenBLAS 0.3.21's names of its x86 kernels written before AVX2
  static constexpr std::string_view before_avx2[] = {
      "Prescott",  "Core2",       "Penryn",    "Dunnington", "Nehalem",
      "Atom",      "Nano",        "Katmai",    "Coppermine", "Northwood",
      "Banias",    "Sandybridge", "Athlon",    "Opteron",    "Opteron_SSE3",
      "Barcelona", "Bobcat",      "Bulldozer", "Piledriver", "Steamroller"};
  bool old = false;
  for (std::string_view k : before_avx2) old = old || kernel == k;
  if (!avx2 || !old) return {};
  return avx512 ? "SkylakeX" : "Haswell";
}

// why_kept: why OpenBLAS still runs kernels older than the CPU: the user's choice
// (OPENBLAS_CORETYPE, or MESHPP_BLAS_KERNELS=keep), an OpenBLAS that cannot re-pick (not a
// DYNAMIC_ARCH build), or a re-pick that did not take
enum class why_kept { asked, cannot_switch, switch_failed };

// blas_kernel_advice(kernel, cpu, avx2, avx512, why): the warning for OpenBLAS running the
// kernels it calls `kernel` where better_blas_kernels names better ones, or nothing. `cpu`: the
// CPU's family and model, as "family F, model M" with the CPU's numbers.
inline std::string blas_kernel_advice(std::string_view kernel, std::string_view cpu, bool avx2,
                                      bool avx512, why_kept why) {
  const std::string better(better_blas_kernels(kernel, avx2, avx512));
  if (better.empty()) return {};
  std::string text = "meshpp: OpenBLAS runs its " + std::string(kernel) +
                     " kernels on a CPU with " + (avx512 ? "AVX-512" : "AVX2") + " (" +
                     std::string(cpu) +
                     "), so matrix products run several times slower than "
                     "they can";
  switch (why) {
    case why_kept::asked:
      text +=
          ", as OPENBLAS_CORETYPE or MESHPP_BLAS_KERNELS=keep asked: OPENBLAS_CORETYPE=" + better +
          " on every rank runs the CPU's own (Open MPI: mpiexec -x " + "OPENBLAS_CORETYPE)";
      break;
    case why_kept::cannot_switch:
      text +=
          "; this OpenBLAS cannot change them (not a DYNAMIC_ARCH build): use one built for "
          "this CPU, or a DYNAMIC_ARCH one";
      break;
    case why_kept::switch_failed:
      text += "; asked for its " + better + " kernels, it kept these";
      break;
  }
  return text + "; MESHPP_QUIET_BLAS=1 silences this";
}

// avx2_kernels_advice(kernel, cpu, avx512, coretype): the warning for OpenBLAS running its AVX2
// kernels (it calls them Haswell, and Zen on AMD) on a CPU with AVX-512 F, BW and VL because
// OPENBLAS_CORETYPE (`coretype`, empty when unset) asks for them, or nothing. meshpp keeps the
// user's choice and says what it costs: matrix products take up to twice as long as with the
// SkylakeX kernels (docs/building.md, BLAS kernels).
inline std::string avx2_kernels_advice(std::string_view kernel, std::string_view cpu, bool avx512,
                                       std::string_view coretype) {
  if (!avx512 || coretype.empty() || (kernel != "Haswell" && kernel != "Zen")) return {};
  return "meshpp: OpenBLAS runs its " + std::string(kernel) +
         " kernels (AVX2) on a CPU with AVX-512 (" + std::string(cpu) +
         "), as OPENBLAS_CORETYPE=" + std::string(coretype) +
         " asks: matrix products take up to twice as long as with kernels that use AVX-512 "
         "(OPENBLAS_CORETYPE=SkylakeX on every rank; Open MPI: mpiexec -x OPENBLAS_CORETYPE); "
         "MESHPP_QUIET_BLAS=1 silences this";
}

// blas_kernel_switch_note(chosen, used, cpu): the note that meshpp runs OpenBLAS's `used`
// kernels instead of the `chosen` ones OpenBLAS picked for a CPU model it does not know
inline std::string blas_kernel_switch_note(std::string_view chosen, std::string_view used,
                                           std::string_view cpu) {
  return "meshpp: OpenBLAS chose its " + std::string(chosen) +
         " kernels, written before AVX2, for a CPU model it does not know (" + std::string(cpu) +
         "); running its " + std::string(used) +
         " kernels instead, which this CPU supports (MESHPP_BLAS_KERNELS=keep keeps OpenBLAS's "
         "choice, OPENBLAS_CORETYPE chooses, MESHPP_QUIET_BLAS=1 silences this)";
}

}  // namespace detail
}  // namespace meshpp

// OpenBLAS's own query of the kernels it runs, and the pair of functions with which it picks
// them at start-up (gotoblas_dynamic_init reads OPENBLAS_CORETYPE) and forgets them at exit;
// the pair exists only in a DYNAMIC_ARCH build. Weak, so a program linked with another BLAS (or
// with none) sees null pointers instead of failing to link. OpenBLAS's cblas.h declares the
// query too, without the weak.
// NOLINTNEXTLINE(readability-redundant-declaration)
extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace meshpp {
namespace detail {

#if defined(__x86_64__) || defined(__i386__)
// cpu_vector_units(): whether this CPU has AVX2 with FMA, and AVX-512 F, BW and VL: what
// better_blas_kernels asks
struct vector_units {
  bool avx2 = false, avx512 = false;
};
inline vector_units cpu_vector_units() {
  return {__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
          __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl")};
}

// cpu_model(): "family F, model M" of this CPU, as OpenBLAS reads them (with the extended fields)
inline std::string cpu_model() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return "family and model unknown";
  unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
  if (family == 6 || family == 15) model += ((eax >> 16) & 0xf) << 4;
  if (family == 15) family += (eax >> 20) & 0xff;
  return "family " + std::to_string(family) + ", model " + std::to_string(model);
}
#endif

// choose_blas_kernels(): where OpenBLAS runs kernels written before AVX2 on a CPU that has
// AVX2 (better_blas_kernels), has it run the better ones, as if OPENBLAS_CORETYPE had named
// them at start-up: OpenBLAS's own re-pick (gotoblas_dynamic_quit, then gotoblas_dynamic_init
// with OPENBLAS_CORETYPE set for the call; the variable is unset again after). Returns what rank
// 0 is to print (say_on_rank_0): blas_kernel_switch_note when it switched, blas_kernel_advice
// when it did not (the user set OPENBLAS_CORETYPE or MESHPP_BLAS_KERNELS=keep; not a
// DYNAMIC_ARCH OpenBLAS; a re-pick that did not take), avx2_kernels_advice where the user's
// OPENBLAS_CORETYPE keeps AVX2 kernels on an AVX-512 CPU, else nothing; before either, a line
// naming a MESHPP_BLAS_KERNELS value other than keep, which is ignored. The environment calls it
// before MPI starts, while the process has one thread (setenv is not safe beside threads that
// read the environment, and OpenBLAS has no kernels between the two calls), and before the
// program's BLAS calls when the environment is the first thing main makes. Every rank decides
// alone, from its own CPU and environment. Nothing but that line with another BLAS, a static
// OpenBLAS (a weak reference does not pull OpenBLAS's functions in), or off x86.
inline std::string choose_blas_kernels() {
  // MESHPP_BLAS_KERNELS takes one value, keep; any other but the empty one (a typo) is named,
  // and ignored
  const char* kernels_env = std::getenv("MESHPP_BLAS_KERNELS");
  const std::string_view asked = kernels_env ? kernels_env : "";
  const std::string unknown =
      asked.empty() || asked == "keep"
          ? std::string()
          : "meshpp: MESHPP_BLAS_KERNELS=" + std::string(asked) +
                " is ignored: the one value it takes is keep (keep OpenBLAS's choice of kernels)";
  const auto also = [&](const std::string& text) -> std::string {
    return unknown.empty() ? text : text.empty() ? unknown : unknown + "\n" + text;
  };
#if defined(__x86_64__) || defined(__i386__)
  if (!openblas_get_corename) return also({});
  const char* chosen = openblas_get_corename();
  if (!chosen) return also({});
  const std::string kernel = chosen;
  const auto [avx2, avx512] = cpu_vector_units();
  const std::string better(better_blas_kernels(kernel, avx2, avx512));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");  // the user's choice, if set
  if (better.empty())
    return also(avx2_kernels_advice(kernel, cpu_model(), avx512, coretype ? coretype : ""));
  if (coretype || asked == "keep")
    return also(blas_kernel_advice(kernel, cpu_model(), avx2, avx512, why_kept::asked));
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit ||
      setenv("OPENBLAS_CORETYPE", better.c_str(), 1) != 0)
    return also(blas_kernel_advice(kernel, cpu_model(), avx2, avx512, why_kept::cannot_switch));
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  const char* now = openblas_get_corename();
  const std::string running = now ? now : "";
  if (running == better) return also(blas_kernel_switch_note(kernel, better, cpu_model()));
  // a build without `better` may give other current kernels (then nothing to say)
  return also(blas_kernel_advice(running, cpu_model(), avx2, avx512, why_kept::switch_failed));
#else
  return also({});
#endif
}

// say_on_rank_0(text): prints a line to standard error on rank 0 of MPI_COMM_WORLD, unless it
// is empty or MESHPP_QUIET_BLAS is set (to any value)
inline void say_on_rank_0(const std::string& text) {
  int rank = 0;
  if (text.empty() || std::getenv("MESHPP_QUIET_BLAS") ||
      MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS || rank != 0)
    return;
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
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
/// blocks of every size from the heap, up to 1 GiB of free heap kept), so the temporaries
/// every training step makes are not mapped and faulted in afresh each time; set
/// MESHPP_SYSTEM_MALLOC=1 (or glibc's own MALLOC_MMAP_THRESHOLD_, MALLOC_MMAP_MAX_ or
/// MALLOC_TRIM_THRESHOLD_) to leave malloc alone.
/// Where OpenBLAS runs kernels written before AVX2 on a CPU with AVX2 (it did not know the
/// CPU's model), it has OpenBLAS run the kernels the CPU supports, and rank 0 says so
/// (detail::choose_blas_kernels; MESHPP_BLAS_KERNELS=keep keeps OpenBLAS's choice). Where the
/// user's OPENBLAS_CORETYPE keeps AVX2 kernels on a CPU with AVX-512, rank 0 says what that
/// costs, and the kernels stay.
class environment {
 public:
  environment(int& argc, char**& argv)
      : malloc_tuned_(detail::keep_freed_memory()),
        blas_note_(detail::choose_blas_kernels()),
        env_(argc, argv, /*abort_on_exception=*/true) {
    std::set_terminate(&detail::abort_job);
    detail::say_on_rank_0(blas_note_);
  }
  environment()
      : malloc_tuned_(detail::keep_freed_memory()),
        blas_note_(detail::choose_blas_kernels()),
        env_(/*abort_on_exception=*/true) {
    std::set_terminate(&detail::abort_job);
    detail::say_on_rank_0(blas_note_);
  }

  /// whether this environment set malloc to keep freed memory (see above)
  bool malloc_tuned() const { return malloc_tuned_; }

  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

 private:
  bool malloc_tuned_;
  std::string blas_note_;  // chosen before MPI starts its threads, said once it has started
  boost::mpi::environment env_;
};

}  // namespace meshpp
