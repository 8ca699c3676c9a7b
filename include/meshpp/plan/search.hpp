// meshpp/plan/search.hpp — layouts ranked by the predicted time of one step: the plan of each
// candidate (plan/plan.hpp) priced on a machine model (plan/machine.hpp).
//
//   const auto machine = mp::machine_model::load_or_defaults("meshpp-machine.txt");
//   mp::layout_search search(machine, /*memory budget per rank, bytes; 0: none*/ 0);
//   search.add<mesh_data>("data", {4}, step);              // step: void(const Mesh&)
//   search.add<mesh_data_model>("data+model", {2, 2}, step);
//   search.time_gemm_shapes();                            // optional: each gemm shape timed
//   std::cout << search.table();                          // ranked, with the numbers
//   search.best().name                                    // the winner
//
// The candidates are the layouts the program instantiated, each on any mesh shape: a layout is
// a type, so the search chooses among those compiled in, planning each on a planned mesh of the
// given shape (no communication, no arithmetic). The price of a step is the sum of
//   compute        einsum flops / the machine's sgemm rate, each gemm shape at its own rate
//                  where time_gemms measured one (layout_search::time_gemm_shapes());
//   passes         the bytes every operation writes to the tensors it makes and reads (or
//                  writes to scratch) in memory-bound passes (operation_count::bytes_streamed:
//                  the operands of expressions, reductions, softmax and copies, einsum's
//                  copies of operands into the order its products need) / the machine's
//                  fused-pass rate: the work that einsum's flops do not count;
//   communication  for every collective of the plan, calls x alpha + bytes sent x beta of its
//                  kind and group size (seconds(kind, p, bytes per call) per call);
// and a candidate fits if the bytes its step makes (an upper bound of what is live at once) are
// within the memory budget. Each term is printed, so the table says why the winner wins.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/ops/einsum_kernel.hpp"
#include "meshpp/plan/machine.hpp"
#include "meshpp/plan/plan.hpp"

namespace meshpp {

/// @brief The predicted time of one step, by term (seconds).
struct step_cost {
  double compute = 0;
  double passes = 0;
  double communication = 0;
  std::uint64_t bytes_made = 0;
  double total() const { return compute + passes + communication; }
};

/// predict(o, p, machine): the price of one operation o of plan p (its row, all its runs)
inline step_cost predict(const operation_count& o, const plan& p, const machine_model& machine) {
  step_cost c;
  if (o.gemms.empty()) {
    c.compute = machine.gemm_seconds(static_cast<double>(o.flops));
  } else {  // each shape at its own rate, where time_gemms measured one
    for (const auto& g : o.gemms)
      c.compute += machine.gemm_seconds(g.shape, static_cast<double>(g.calls));
  }
  c.bytes_made = o.bytes_made;
  c.passes = machine.stream_seconds(static_cast<double>(o.bytes_made + o.bytes_streamed));
  for (const auto& e : o.collectives) {
    const int group = p.group_size(e.mask);
    if (group == 1 || e.count.calls == 0) continue;  // counted, but nothing moves
    const double per_call =
        static_cast<double>(e.count.bytes_sent) / static_cast<double>(e.count.calls);
    c.communication +=
        static_cast<double>(e.count.calls) * machine.seconds(e.kind, group, per_call);
  }
  return c;
}

namespace detail {
// time_gemm_list(machine, shapes, min_seconds): measures the rate of gemms of each shape on this
// process that machine has no rate for (skipping empty ones and repeats) and records it
// (time_gemms says how); returns the number of shapes timed. The shapes are timed interleaved:
// each of 5 rounds times every shape once, and each shape's rate is the median of its 5, so a
// load that changes while they are timed (other processes of the search, or ranks
// oversubscribing the cores, each at a different point of its own list) weighs on every shape
// alike rather than on those timed at a bad moment; ranking candidates needs exactly that.
inline std::size_t time_gemm_list(machine_model& machine, std::vector<gemm_shape> shapes,
                                  double min_seconds) {
  std::erase_if(shapes, [&](const gemm_shape& s) {
    return machine.has_gemm_rate(s) || s.m == 0 || s.n == 0 || s.k == 0;
  });
  std::sort(shapes.begin(), shapes.end());
  shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
  using clock = std::chrono::steady_clock;
  // one set of operands, as large as the largest shape needs, serves every shape (the values
  // are constants): the memory of one product at a time, as when the shapes were timed apart
  std::size_t a_size = 0, b_size = 0, c_size = 0;
  for (const auto& s : shapes) {
    a_size = std::max(a_size, s.m * s.k);
    b_size = std::max(b_size, s.k * s.n);
    c_size = std::max(c_size, s.m * s.n);
  }
  std::vector<float> a(a_size, 0.5f), b(b_size, 0.25f), c(c_size, 0.0f);
  auto seconds = [&](const gemm_shape& s, std::size_t calls) {
    const std::size_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
    const auto start = clock::now();
    for (std::size_t i = 0; i < calls; ++i) {
      detail::gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                          c.data(), s.n);
    }
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  struct timing {
    gemm_shape s;
    std::size_t reps;
    std::vector<double> rates;
  };
  std::vector<timing> t;
  t.reserve(shapes.size());
  for (const auto& s : shapes) {
    seconds(s, 1);  // first touch, code and caches
    const double one = seconds(s, 1);
    t.push_back(
        {s,
         static_cast<std::size_t>(std::max(1.0, std::ceil(min_seconds / std::max(one, 1e-9)))),
         {}});
  }
  for (int round = 0; round < 5; ++round) {
    for (auto& x : t) {
      seconds(x.s, 1);  // the operands back in cache, as the first timing had them
      const double flops = 2.0 * static_cast<double>(x.s.m) * static_cast<double>(x.s.n) *
                           static_cast<double>(x.s.k) * static_cast<double>(x.reps);
      x.rates.push_back(flops / std::max(seconds(x.s, x.reps), 1e-12));
    }
  }
  for (auto& x : t) {
    std::nth_element(x.rates.begin(), x.rates.begin() + 2, x.rates.end());
    machine.set_gemm_rate(x.s, x.rates[2]);
  }
  return t.size();
}
}  // namespace detail

/// time_gemms(machine, p, min_seconds): measures, on this process, the rate of every gemm
/// shape the products of plan p take that `machine` has no rate for, and records it
/// (machine_model::set_gemm_rate), so p is priced at the rate of the products it makes: a thin
/// or small gemm runs far below the rate of the large squares that calibrate measures. Each
/// shape: cblas_sgemm (the call einsum makes) on float buffers, warmed up, then the median of
/// 5 timings of enough calls to last min_seconds, the shapes taken in turn in each of the 5
/// rounds (detail::time_gemm_list). Returns the number of shapes timed. No communication:
/// where every rank searches at once, each times its own under the same load.
inline std::size_t time_gemms(machine_model& machine, const plan& p, double min_seconds = 2e-3) {
  std::vector<gemm_shape> shapes;
  for (const auto& g : p.gemms()) shapes.push_back(g.shape);
  return detail::time_gemm_list(machine, std::move(shapes), min_seconds);
}

/// predict(p, machine): the price of the planned step p on the machine model (see the top):
/// the sum of its operations' prices
inline step_cost predict(const plan& p, const machine_model& machine) {
  step_cost c;
  for (const auto& o : p.operations()) {
    const auto one = predict(o, p, machine);
    c.compute += one.compute;
    c.passes += one.passes;
    c.communication += one.communication;
    c.bytes_made += one.bytes_made;
  }
  return c;
}

// same_update(run, planned): the operation a run measured is the one a plan priced: the same
// name, or an optimizer's update of the same variable that the plan priced sharded and the
// run did whole ("update w" beside "update w (sharded)": sharding::measured chose)
inline bool same_update(const std::string& run, const std::string& planned) {
  constexpr std::string_view sharded = detail::sharded_update_suffix;
  return run == planned ||
         (planned.starts_with("update ") && planned.ends_with(sharded) &&
          planned.size() == run.size() + sharded.size() && planned.starts_with(run));
}

/// profile_table(p, measured, steps, machine): the plan of one step priced per operation
/// beside the time the same operations took in a real run. `measured` are the counters of the
/// run, timed by operation (counters::by_operation(true, true)) over `steps` steps; rows are
/// matched by phase and name. One line per operation of the plan (predicted ms per step by
/// term, measured ms per step, measured / predicted), then the operations measured that the
/// plan has not, the time charged to none, and the totals. Throws meshpp::error if `measured`
/// was not timed or steps is 0.
inline std::string profile_table(const plan& p, const counters& measured, std::size_t steps,
                                 const machine_model& machine) {
  if (!measured.timed() || steps == 0) {
    throw error(
        "meshpp::profile_table: the measured counters must be timed by operation "
        "(counters::by_operation(true, true)) over at least one step");
  }
  const double per_step = 1e3 / static_cast<double>(steps);
  std::string out;
  char line[768];
  std::snprintf(line, sizeof line, "%-10s %9s %9s %9s %9s %9s %7s  %s\n", "phase", "predicted",
                "compute", "passes", "comm", "measured", "ratio", "operation (ms per step)");
  out += line;
  auto ratio_text = [](double measured_ms, double predicted_ms) {
    char b[32];
    if (predicted_ms > 0)
      std::snprintf(b, sizeof b, "%7.2f", measured_ms / predicted_ms);
    else
      std::snprintf(b, sizeof b, "%7s", "-");
    return std::string(b);
  };
  step_cost total;
  double total_measured = 0;
  std::vector<bool> matched(measured.operations().size(), false);
  for (const auto& o : p.operations()) {
    const auto c = predict(o, p, machine);
    total.compute += c.compute;
    total.passes += c.passes;
    total.communication += c.communication;
    double ms = 0;
    bool same = false, whole = false;  // rows of the same name; of the update run whole
    for (std::size_t i = 0; i < measured.operations().size(); ++i) {
      const auto& m = measured.operations()[i];
      if (m.phase != o.phase || !same_update(m.name, o.name)) continue;
      matched[i] = true;
      ms += m.seconds * per_step;  // (both rows, where some steps sharded and some did not)
      (m.name == o.name ? same : whole) = true;
    }
    // a plan prices Adam's update sharded; the run may have timed whole faster
    // (optim/optimizer.hpp, sharding::measured): the row says so
    const std::string name =
        !whole  ? o.name
        : !same ? o.name.substr(0, o.name.size() - detail::sharded_update_suffix.size()) +
                      " (run whole, planned sharded)"
                : o.name + " (some steps run whole)";
    total_measured += ms;
    std::snprintf(line, sizeof line, "%-10s %9.3f %9.3f %9.3f %9.3f %9.3f %s  %s\n",
                  o.phase.c_str(), 1e3 * c.total(), 1e3 * c.compute, 1e3 * c.passes,
                  1e3 * c.communication, ms, ratio_text(ms, 1e3 * c.total()).c_str(), name.c_str());
    out += line;
  }
  for (std::size_t i = 0; i < measured.operations().size(); ++i) {
    if (matched[i]) continue;
    const auto& m = measured.operations()[i];
    total_measured += m.seconds * per_step;
    std::snprintf(line, sizeof line, "%-10s %9s %9s %9s %9s %9.3f %7s  %s (not in the plan)\n",
                  m.phase.c_str(), "-", "-", "-", "-", m.seconds * per_step, "-", m.name.c_str());
    out += line;
  }
  const double none = measured.unattributed_seconds() * per_step;
  total_measured += none;
  std::snprintf(line, sizeof line, "%-10s %9s %9s %9s %9s %9.3f %7s  %s\n", "", "-", "-", "-", "-",
                none, "-", "(no operation)");
  out += line;
  std::snprintf(line, sizeof line, "%-10s %9.3f %9.3f %9.3f %9.3f %9.3f %s  %s\n", "total",
                1e3 * total.total(), 1e3 * total.compute, 1e3 * total.passes,
                1e3 * total.communication, total_measured,
                ratio_text(total_measured, 1e3 * total.total()).c_str(), "one step");
  return out + line;
}

namespace detail {
template <class Rules>
struct layout_code_of;
template <class... Splits>
struct layout_code_of<layout<Splits...>> {
  static std::string text() {
    std::string out = "mp::layout<";
    bool first = true;
    ((out += std::string(first ? "" : ", ") + "mp::split<" +
             std::string(Splits::tensor_dim::name()) + ", " +
             std::string(Splits::mesh_dim::name()) + ">",
      first = false),
     ...);
    return out + ">";
  }
};
}  // namespace detail

/// layout_code<Mesh>(): the mesh type as code to paste,
/// "mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>>>"
template <class Mesh>
requires is_mesh_v<Mesh> std::string layout_code() {
  std::string axes = "mp::axes<";
  const auto names = Mesh::names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    axes += (i ? ", " : "") + std::string(names[i]);
  }
  return "mp::mesh<" + axes + ">, " + detail::layout_code_of<typename Mesh::rules>::text() + ">";
}

/// @brief Candidate layouts, each planned and priced; ranked by predicted step time.
class layout_search {
 public:
  struct candidate {
    std::string name;  // as the program names the layout ("data+model")
    std::string code;  // layout_code<Mesh>()
    plan steps;        // the plan of one step (rank 0)
    step_cost cost;
    bool fits = true;  // within the memory budget
  };

  // layout_search(machine, memory_budget): memory_budget in bytes per rank, 0 for none (then
  // the machine's memory_bytes_per_rank, if it knows one)
  explicit layout_search(machine_model machine, double memory_budget = 0)
      : machine_(std::move(machine)),
        budget_(memory_budget > 0 ? memory_budget : machine_.memory_bytes_per_rank) {}

  /// add<Mesh>(name, sizes, step): plans step(mesh) on a planned mesh of these sizes (rank 0)
  /// and prices it on the machine's rates now (the copy returned keeps that price; a later
  /// time_gemm_shapes() prices the search's own candidates again). Throws what make_plan
  /// throws (a step that cannot be planned).
  template <class Mesh, class Step>
  requires is_mesh_v<Mesh> candidate add(std::string name,
                                         const typename Mesh::coordinates_type& sizes,
                                         Step&& step) {
    auto p = make_plan<Mesh>(sizes, std::forward<Step>(step));
    candidates_.push_back({std::move(name), layout_code<Mesh>(), std::move(p), {}, true});
    price(candidates_.back());
    return candidates_.back();
  }

  /// time_gemm_shapes(min_seconds): measures the rate of every gemm shape of every candidate
  /// added so far that the machine has no rate for (time_gemms), all in one interleaved timing,
  /// so the candidates' products are priced at their own rates under the same load; prices every
  /// candidate again. Call it after the last add(). Returns the number of shapes timed.
  std::size_t time_gemm_shapes(double min_seconds = 2e-3) {
    std::vector<gemm_shape> shapes;
    for (const auto& c : candidates_)
      for (const auto& g : c.steps.gemms()) shapes.push_back(g.shape);
    const std::size_t timed = detail::time_gemm_list(machine_, std::move(shapes), min_seconds);
    for (auto& c : candidates_) price(c);
    return timed;
  }
  // (the switch time_gemm_shapes(true) of before, which timed the candidates added after it
  // one by one, is gone: a bool would otherwise convert to min_seconds)
  void time_gemm_shapes(bool) = delete;

  // ranked(): the candidates, those that fit first, each group fastest first
  std::vector<candidate> ranked() const {
    auto out = candidates_;
    std::stable_sort(out.begin(), out.end(), [](const candidate& a, const candidate& b) {
      if (a.fits != b.fits) return a.fits;
      return a.cost.total() < b.cost.total();
    });
    return out;
  }
  // best(): the fastest candidate that fits; throws meshpp::error if none was added or none fits
  candidate best() const {
    const auto r = ranked();
    if (r.empty()) throw error("meshpp::layout_search::best(): no candidate was added");
    if (!r.front().fits) {
      throw error("meshpp::layout_search::best(): no candidate fits in " + mib(budget_) +
                  " MiB per rank (the smallest needs " +
                  mib(static_cast<double>(smallest().cost.bytes_made)) + " MiB)");
    }
    return r.front();
  }

  /// The ranked candidates with every term of their price: one line each, then the winner's
  /// mesh type as code.
  std::string table() const {
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "%-4s %-12s %-40s %10s %10s %10s %10s %10s  %s\n", "rank",
                  "layout", "mesh", "step ms", "compute", "passes", "comm", "MiB made", "fits");
    out += line;
    const auto r = ranked();
    for (std::size_t i = 0; i < r.size(); ++i) {
      const auto& c = r[i];
      std::snprintf(line, sizeof line, "%-4zu %-12s %-40s %10.3f %10.3f %10.3f %10.3f %10.1f  %s\n",
                    i + 1, c.name.c_str(), c.steps.mesh().c_str(), 1e3 * c.cost.total(),
                    1e3 * c.cost.compute, 1e3 * c.cost.passes, 1e3 * c.cost.communication,
                    static_cast<double>(c.cost.bytes_made) / (1 << 20), c.fits ? "yes" : "no");
      out += line;
    }
    out += extrapolated();
    if (!r.empty() && r.front().fits) out += "winner: " + r.front().code + "\n";
    return out;
  }

  /// extrapolated(): a note for each collective and group size the candidates communicate in
  /// that the machine model has no figures for (priced from the nearest group size it has:
  /// machine_model::seconds), or "" if there are none. A model calibrated at 2 ranks prices a
  /// 4-rank search that way; 4 ranks sharing 2 cores cost far more per call than that says
  /// (docs/plans.md, "At 4 ranks on 2 cores"), so the note says to calibrate at the rank count that
  /// runs.
  std::string extrapolated() const {
    std::set<std::pair<collective, int>> missing;  // in order, each once
    for (const auto& c : candidates_) {
      for (const auto& o : c.steps.operations()) {
        for (const auto& e : o.collectives) {
          const int p = c.steps.group_size(e.mask);
          if (p >= 2 && e.count.calls != 0 && !machine_.has_figures(e.kind, p))
            missing.emplace(e.kind, p);
        }
      }
    }
    std::string out;
    for (const auto& [kind, p] : missing) {
      out += "note: " + std::string(collective_name(kind)) + " over " + std::to_string(p) +
             " ranks is priced from the figures of other group sizes; for this search, calibrate "
             "at " +
             std::to_string(p) + " ranks (mpiexec -n " + std::to_string(p) +
             " examples/calibrate)\n";
    }
    return out;
  }

  const std::vector<candidate>& candidates() const { return candidates_; }
  const machine_model& machine() const { return machine_; }

 private:
  static std::string mib(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", bytes / (1 << 20));
    return b;
  }
  // price(c): c's cost on the machine model now, and whether it fits in the budget
  void price(candidate& c) const {
    c.cost = predict(c.steps, machine_);
    c.fits = budget_ <= 0 || static_cast<double>(c.cost.bytes_made) <= budget_;
  }
  const candidate& smallest() const {
    return *std::min_element(
        candidates_.begin(), candidates_.end(),
        [](const auto& a, const auto& b) { return a.cost.bytes_made < b.cost.bytes_made; });
  }

  machine_model machine_;
  double budget_;
  std::vector<candidate> candidates_;
};

}  // namespace meshpp
