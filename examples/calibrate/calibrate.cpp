// calibrate: measures this machine's model for layout search (include/meshpp/plan/machine.hpp)
// and writes it to a file.
//
//   mpiexec -n 2 build/examples/calibrate --out meshpp-machine.txt
//   [--quick] [--rounds N] [--max-bytes B] [--verbose]
//
// What it measures, on every rank at once (as a training step runs):
//   - each collective kind through meshpp's own collective layer (comm/collectives.hpp,
//     comm/permute.hpp, gather(t, root)), the calls the ops make, in groups of every divisor
//     d >= 2 of the rank count: the ranks form a mesh [outer: p/d, group: d] and the p/d groups
//     run at once, as a mesh dim of size d does in a program. Buffers of 8 B to --max-bytes
//     (16 MiB) a rank, in steps of 2x; --rounds rounds (9), each timing every size and kind once
//     in a rotating order, so that a change of the machine's speed during the run spreads over
//     all points instead of falling on one kind. One timing is k back-to-back calls between
//     barriers (k chosen once so they take about 2 ms), the slowest rank's time / k; the bytes
//     sent per call are read from the mesh's counters, so they are the counters' own formulas.
//     Per kind and group size: the median of each size over the rounds, and alpha, beta fitted
//     to (bytes sent, seconds) by fit_alpha_beta (least squares of relative error).
//   - sgemm: cblas_sgemm (the CBLAS the einsums call) of square 256, 512 and 1024 matrices on
//     every rank at once; the model keeps the largest's rate (the asymptotic one), the table
//     shows all three.
//   - a fused pass: `c = a * 0.5f + b` over meshpp tensors of 4 Mi floats a rank (48 MiB read
//     and written a rank, far past the caches), every rank at once: bytes / time.
//   - memory: the node's physical memory over the ranks on the node (MPI processor names).
// --quick: a few sizes (8 B, 1 KiB, 64 KiB), 3 rounds and small products, for the tests.
//
// Rank 0 prints progress, then the table (kind, p, alpha us, 1/beta GB/s, fit residual) and
// writes the file; --verbose adds every size's median against the fitted line.
#include <meshpp/meshpp.hpp>
#include <meshpp/plan/machine.hpp>

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "cli.hpp"

namespace mp = meshpp;

MESHPP_DIM(outer);
MESHPP_DIM(group);
MESHPP_DIM(x);

namespace {

using mesh_t = mp::mesh<mp::axes<outer, group>, mp::layout<mp::split<x, group>>>;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string out = "meshpp-machine.txt";
  bool quick = false;
  std::size_t rounds = 0;  // 0: 9, or 3 with --quick
  std::size_t max_bytes = std::size_t{16} << 20;
  bool verbose = false;
};

options parse(int argc, char** argv) {
  options o;
  examples::cli cli("calibrate",
                    "measures this machine's collectives and kernels into the machine model "
                    "layout search prices on");
  cli.add("--out", o.out, "the machine model file written", "FILE");
  cli.add("--quick", o.quick, "three sizes and three rounds: seconds, not minutes");
  cli.add("--rounds", o.rounds, "timed rounds per size (0: 9, or 3 with --quick)");
  cli.add("--max-bytes", o.max_bytes, "the largest message timed (at least 8)");
  cli.add("--verbose", o.verbose, "print every size's median against the fitted line");
  cli.parse(argc, argv);
  if (o.rounds == 0) o.rounds = o.quick ? 3 : 9;
  if (o.max_bytes < 8) cli.fail("--max-bytes must be at least 8");
  return o;
}

bool leader() { return boost::mpi::communicator().rank() == 0; }

// say(format, ...): a progress line from rank 0, at once
template <class... A>
void say(const char* format, A... a) {
  if (!leader()) return;
  std::printf(format, a...);
  std::fflush(stdout);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// slowest(mesh, values): the largest of each value over all ranks of the mesh
template <std::size_t N>
std::array<double, N> slowest(const mesh_t& mesh, std::array<double, N> values) {
  mp::allreduce<mp::over<outer, group>, mp::op::max>::run(mesh, std::span<double>(values));
  return values;
}

// timed(mesh, k, f): f() k times between barriers; the slowest rank's seconds per call
template <class F>
double timed(const mesh_t& mesh, std::size_t k, F&& f) {
  mesh.world().barrier();
  const auto start = clock_type::now();
  for (std::size_t i = 0; i < k; ++i) f();
  const double mine =
      std::chrono::duration<double>(clock_type::now() - start).count() / static_cast<double>(k);
  return slowest(mesh, std::array{mine})[0];
}

constexpr std::array<mp::collective, mp::collective_kinds> kinds{
    mp::collective::allreduce,      mp::collective::allgather, mp::collective::alltoall,
    mp::collective::reduce_scatter, mp::collective::broadcast, mp::collective::permute,
    mp::collective::gather};

// The collectives of one group size d on a mesh [outer: p/d, group: d], each called on a
// buffer of `values` floats a rank (rounded up to a multiple of d where blocks must divide).
class collective_bench {
 public:
  collective_bench(const mesh_t& mesh, std::size_t max_values)
      : mesh_(mesh),
        d_(static_cast<std::size_t>(mesh.size<group>())),
        send_(max_values + d_, 1.0f),
        receive_(d_ * (max_values + d_), 0.0f),
        send_counts_(d_),
        receive_counts_(d_) {}

  std::size_t group_size() const { return d_; }

  // prepare(values): makes what one size needs outside the timings (gather's tensor)
  void prepare(std::size_t values) {
    gathered_ = mp::zeros<float, x>(mesh_, mp::extents{x{} = values * d_});
  }

  // call(kind, values): one call of the collective
  void call(mp::collective kind, std::size_t values) {
    const std::size_t blocks = (values + d_ - 1) / d_ * d_;  // a multiple of d
    std::span<float> send(send_), receive(receive_);
    switch (kind) {
      case mp::collective::allreduce:
        mp::allreduce<mp::over<group>>::run(mesh_, send.first(values));
        break;
      case mp::collective::allgather:
        mp::allgather<mp::over<group>>::run(mesh_, std::span<const float>(send.first(values)),
                                            receive.first(values * d_));
        break;
      case mp::collective::alltoall:
        mp::alltoall<mp::over<group>>::run(mesh_, std::span<const float>(send.first(blocks)),
                                           receive.first(blocks));
        break;
      case mp::collective::reduce_scatter:
        mp::reduce_scatter<mp::over<group>>::run(mesh_, std::span<const float>(send.first(blocks)),
                                                 receive.first(blocks / d_));
        break;
      case mp::collective::broadcast:
        mp::broadcast<mp::over<group>>::run(mesh_, send.first(values), 0);
        break;
      case mp::collective::permute: {
        // a shift by one along the group: the neighbour exchange of halos and shifts
        const auto me = static_cast<std::size_t>(mesh_.coordinate<group>());
        std::fill(send_counts_.begin(), send_counts_.end(), 0);
        std::fill(receive_counts_.begin(), receive_counts_.end(), 0);
        send_counts_[(me + 1) % d_] = values;
        receive_counts_[(me + d_ - 1) % d_] = values;
        mp::permute<mp::over<group>>::run(mesh_, std::span<const float>(send.first(values)),
                                          std::span<const std::size_t>(send_counts_),
                                          receive.first(values),
                                          std::span<const std::size_t>(receive_counts_));
        break;
      }
      case mp::collective::gather:
        (void)mp::gather(*gathered_, 0);
        break;
    }
  }

 private:
  using tensor_t = decltype(mp::zeros<float, x>(std::declval<const mesh_t&>(),
                                                mp::extents{x{} = std::size_t{1}}));
  const mesh_t& mesh_;
  std::size_t d_;
  std::vector<float> send_, receive_;
  std::vector<std::size_t> send_counts_, receive_counts_;
  std::optional<tensor_t> gathered_;
};

// The sizes timed: 8 B up to max_bytes in steps of 2x (always ending at max_bytes)
std::vector<std::size_t> sizes_in_bytes(const options& o) {
  if (o.quick) {
    std::vector<std::size_t> v;
    for (const std::size_t s : {std::size_t{8}, std::size_t{1024}, std::size_t{65536}})
      if (s <= o.max_bytes) v.push_back(s);
    return v;
  }
  std::vector<std::size_t> v;
  for (std::size_t s = 8; s < o.max_bytes; s *= 2) v.push_back(s);
  v.push_back(o.max_bytes);
  return v;
}

// calibrate_group(model, o, p, d): alpha and beta of every kind in groups of d ranks
void calibrate_group(mp::machine_model& model, const options& o, int p, int d) {
  const mesh_t mesh({p / d, d});
  const std::vector<std::size_t> sizes = sizes_in_bytes(o);
  const std::size_t max_values = std::max<std::size_t>(1, o.max_bytes / sizeof(float));
  collective_bench bench(mesh, max_values);
  const double target = o.quick ? 2e-4 : 2e-3;  // seconds of one timing
  // repeats[s][kind]: calls per timing; seconds[s][kind]: one time per round; bytes sent a call
  std::vector<std::array<std::size_t, mp::collective_kinds>> repeats(sizes.size());
  std::vector<std::array<std::vector<double>, mp::collective_kinds>> seconds(sizes.size());
  std::vector<std::array<double, mp::collective_kinds>> bytes(sizes.size());
  const auto begun = clock_type::now();
  for (std::size_t round = 0; round < o.rounds; ++round) {
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const std::size_t values = std::max<std::size_t>(1, sizes[s] / sizeof(float));
      bench.prepare(values);
      for (std::size_t j = 0; j < kinds.size(); ++j) {
        const std::size_t kind_index = (j + round + s) % kinds.size();  // a rotating order
        const mp::collective kind = kinds[kind_index];
        auto one_call = [&] { bench.call(kind, values); };
        if (round == 0) {  // the first call warms up and sets k, alike on every rank
          one_call();
          const double once = timed(mesh, 1, one_call);
          repeats[s][kind_index] =
              static_cast<std::size_t>(std::clamp(target / once, 1.0, 10000.0));
          mesh.counters().reset();
          one_call();
          const auto sent = mesh.counters().total(kind);
          bytes[s][kind_index] = slowest(mesh, std::array{static_cast<double>(sent.bytes_sent) /
                                                          static_cast<double>(sent.calls)})[0];
        }
        seconds[s][kind_index].push_back(timed(mesh, repeats[s][kind_index], one_call));
      }
    }
    say("calibrate: groups of %d, round %zu of %zu done (%.1f s)\n", d, round + 1, o.rounds,
        std::chrono::duration<double>(clock_type::now() - begun).count());
  }
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::vector<mp::timing_point> points;
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      // the smallest buffers of alltoall and reduce_scatter round up to one value a member, so
      // two sizes can send the same bytes: one point each (the first)
      if (!points.empty() && points.back().bytes_sent == bytes[s][k]) continue;
      points.push_back({bytes[s][k], median(seconds[s][k])});
    }
    const mp::alpha_beta fit = mp::fit_alpha_beta(points);
    model.set(kinds[k], d, fit, points);
    if (o.verbose) {
      say("  %-15s p=%d   bytes sent    median s    line s   line/median  model/median\n",
          std::string(mp::collective_name(kinds[k])).c_str(), d);
      for (const auto& q : points) {
        const double kept = model.seconds(kinds[k], d, q.bytes_sent);
        say("  %-15s      %12.0f %11.4g %11.4g %8.3f %12.3f\n", "", q.bytes_sent, q.seconds,
            fit.seconds(q.bytes_sent), fit.seconds(q.bytes_sent) / q.seconds, kept / q.seconds);
      }
    }
  }
}

// rate_of(mesh, o, work, f): work / the median over rounds of f's slowest-rank time
template <class F>
double rate_of(const mesh_t& mesh, std::size_t rounds, double work, F&& f) {
  f();  // warm-up: first touch, code and caches
  std::vector<double> times;
  for (std::size_t r = 0; r < rounds; ++r) times.push_back(timed(mesh, 1, f));
  return work / median(times);
}

// gemm_rate(mesh, o): flop/s of cblas_sgemm, every rank at once; the largest size's is kept
double gemm_rate(const mesh_t& mesh, const options& o) {
  const std::vector<int> sizes = o.quick ? std::vector<int>{128} : std::vector<int>{256, 512, 1024};
  double rate = 0;
  for (const int n : sizes) {
    const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    std::vector<float> a(count, 0.5f), b(count, 0.25f), c(count, 0.0f);
    rate = rate_of(mesh, o.rounds, 2.0 * n * n * n, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
    });
    say("calibrate: sgemm %d x %d x %d: %.2f GFLOP/s a rank\n", n, n, n, rate * 1e-9);
  }
  return rate;
}

// stream_rate(mesh, o): bytes/s of the fused pass c = a * 0.5f + b (a, b read, c written)
double stream_rate(const mesh_t& mesh, const options& o) {
  const std::size_t local = o.quick ? std::size_t{1} << 18 : std::size_t{1} << 22;
  const auto sizes = mp::extents{x{} = local * static_cast<std::size_t>(mesh.size<group>())};
  auto a = mp::ones<float, x>(mesh, sizes);
  auto b = mp::ones<float, x>(mesh, sizes);
  auto c = mp::zeros<float, x>(mesh, sizes);
  const double rate = rate_of(mesh, o.rounds, 3.0 * static_cast<double>(local * sizeof(float)),
                              [&] { c = a * 0.5f + b; });
  say("calibrate: fused pass c = a * 0.5f + b over %zu floats: %.2f GB/s a rank\n", local,
      rate * 1e-9);
  return rate;
}

// memory_per_rank(): the node's physical memory over the ranks on this node
double memory_per_rank() {
  const boost::mpi::communicator world;
  std::vector<std::string> names;
  boost::mpi::all_gather(world, boost::mpi::environment::processor_name(), names);
  const auto here = std::count(names.begin(), names.end(), names[world.rank()]);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;  // unknown
  return static_cast<double>(pages) * static_cast<double>(page) / static_cast<double>(here);
}

// load_average(): the system's one-minute load average (-1: unknown)
double load_average() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// source_line(o, p, load_before): what the file's `source` says: program, ranks, host, time,
// the load average before and after (other work on the machine distorts every figure)
std::string source_line(const options& o, int p, double load_before) {
  char text[256];
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", std::gmtime(&now));
  std::snprintf(text, sizeof text,
                "examples/calibrate at %d ranks on %s, %s, %zu rounds, buffers 8 B..%zu B%s, "
                "load average %.2f before, %.2f after",
                p, boost::mpi::environment::processor_name().c_str(), when, o.rounds,
                sizes_in_bytes(o).back(), o.quick ? " (--quick)" : "", load_before, load_average());
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    const options o = parse(argc, argv);
    const double load_before = load_average();
    const int p = boost::mpi::communicator().size();
    if (p < 2) throw mp::error("calibrate: run it under mpiexec with 2 or more ranks");
    mp::machine_model model;
    for (int d = 2; d <= p; ++d) {
      if (p % d == 0 && (!o.quick || d == p)) calibrate_group(model, o, p, d);
    }
    const mesh_t whole({1, p});
    model.gemm_flops_per_second = gemm_rate(whole, o);
    model.stream_bytes_per_second = stream_rate(whole, o);
    model.memory_bytes_per_rank = memory_per_rank();
    model.source = source_line(o, p, load_before);
    if (leader()) {
      std::printf("\n%s", model.report().c_str());
      model.save(o.out);
      // the file must read back as the model measured (the example test looks for this line)
      if (!(mp::machine_model::load(o.out) == model))
        throw mp::error("calibrate: " + o.out + " does not read back as the model written");
      std::printf("calibrate: wrote %s and read it back equal\n", o.out.c_str());
    }
  } catch (const mp::error& e) {
    std::fprintf(stderr, "calibrate: rank %d: %s\n", boost::mpi::communicator().rank(), e.what());
    return 1;
  }
  return 0;
}
