// bench/bench.hpp — timing meshpp against the real thing, in the same process and run.
//
// compare(comm, reps, meshpp, baseline) runs the two alternately (ABAB..., so drift and
// noise fall on both alike), each repetition between barriers and timed as the slowest
// rank's time, and returns the median of each. Results print as one JSON line per case:
//   {"bench": ..., "case": ..., "ranks": n, "meshpp_s": t, "baseline": "...",
//    "baseline_s": t0, "time_ratio": t / t0}
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/operations.hpp>

#include <meshpp/core/memory.hpp>
#include <meshpp/optim/optimizer.hpp>

namespace bench {

struct times {
  double meshpp_s;
  double baseline_s;
};

template <class F>
double timed(const boost::mpi::communicator& comm, F&& f) {
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double slowest = 0;
  boost::mpi::all_reduce(comm, mine, slowest, boost::mpi::maximum<double>());
  return slowest;
}

// sharding_named(name): the optimizer sharding --sharded-updates on|off|measured names
inline meshpp::sharding sharding_named(const std::string& name) {
  return name == "on"    ? meshpp::sharding::on
         : name == "off" ? meshpp::sharding::off
                         : meshpp::sharding::measured;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// reps_for(seconds_per_call, seconds): enough repetitions for about `seconds` per side, 5..200
inline int reps_for(double seconds_per_call, double seconds = 0.5) {
  const int r = static_cast<int>(seconds / std::max(seconds_per_call, 1e-7));
  return std::clamp(r, 5, 200);
}

// compare(comm, meshpp, baseline, seconds = 0.5): about `seconds` of repetitions per side
template <class M, class B>
times compare(const boost::mpi::communicator& comm, M&& meshpp, B&& baseline,
              double seconds = 0.5) {
  // warm up both (page faults, BLAS buffers, MPI connections), then size the run
  const double once = std::max(timed(comm, meshpp), timed(comm, baseline));
  const int reps = reps_for(once, seconds);
  std::vector<double> a, b;
  for (int i = 0; i < reps; ++i) {
    a.push_back(timed(comm, meshpp));
    b.push_back(timed(comm, baseline));
  }
  return {median(a), median(b)};
}

// peak_resident_mib(comm): the largest peak resident memory over the ranks, in MiB
inline double peak_resident_mib(const boost::mpi::communicator& comm) {
  return static_cast<double>(meshpp::peak_resident_bytes(comm)) / (1024.0 * 1024.0);
}

inline void print(const boost::mpi::communicator& comm, const std::string& bench,
                  const std::string& name, const std::string& baseline, const times& t) {
  if (comm.rank() != 0) return;
  std::printf(
      "{\"bench\": \"%s\", \"case\": \"%s\", \"ranks\": %d, \"meshpp_s\": %.6e, "
      "\"baseline\": \"%s\", \"baseline_s\": %.6e, \"time_ratio\": %.4f}\n",
      bench.c_str(), name.c_str(), comm.size(), t.meshpp_s, baseline.c_str(), t.baseline_s,
      t.meshpp_s / t.baseline_s);
  std::fflush(stdout);
}

}  // namespace bench
