// meshpp/plan/machine.hpp — what this machine's collectives, products and memory passes cost:
// the constants a layout search ranks plans by, measured by examples/calibrate.
//
//   auto machine = meshpp::machine_model::load_or_defaults("meshpp-machine.txt");
//   machine.seconds(meshpp::collective::allreduce, 2, bytes_sent)  // alpha + beta bytes_sent
//   machine.gemm_seconds(2.0 * m * n * k)                          // flops at the sgemm rate
//   machine.stream_seconds(3.0 * n * sizeof(float))                // bytes of a fused pass
//
// Collectives follow the alpha-beta (latency-bandwidth) model: a call of collective c in a
// group of p ranks costs alpha(c, p) + beta(c, p) * bytes_sent seconds, where bytes_sent is what
// the mesh's counters record for it (core/counters.hpp): allreduce 2(p-1)/p n s, allgather
// (p-1) n s, reduce_scatter and alltoall (p-1)/p n s, broadcast n s at the root, permute the
// bytes sent to others, gather n s from a contributor. Because those figures already carry the
// algorithms' factors of p, beta is the time per byte on a link and depends little on p, and a
// plan's counters price directly. One line per kind is the summary; the times it was fitted to
// are kept too, and seconds() follows them piecewise (one line cannot follow shared-memory MPI
// both in and out of cache: see seconds()).
//
// The file (save, load) is text, one `key value` a line after a versioned first line:
//
//   meshpp-machine 1
//   # comment lines and blank lines are skipped
//   source examples/calibrate at 2 ranks ...               free text to the end of the line
//   gemm.flops_per_second 9.4e+10                          cblas_sgemm rate of one rank
//   stream.bytes_per_second 1.1e+10                        a fused element-wise pass, one rank
//   memory.bytes_per_rank 4.1e+09                          (optional; absent: unknown)
//   allreduce.2.alpha 2.1e-07                              seconds per call, groups of 2 ranks
//   allreduce.2.beta 1.3e-10                               seconds per byte sent
//   allreduce.2.residual 0.06                              (optional) the fit's rms relative error
//   allreduce.2.seconds_at.1048576 1.2e-04                 (optional, any number) a measured time
//
// Numbers are written in the shortest form that reads back as the same double (save, then load,
// gives an equal model). Unknown keys, a key given twice, an alpha without its beta, negative or
// non-finite numbers are errors (meshpp::error naming the file and line), so a typo is never
// silently a default.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

/// @brief The alpha-beta cost of one collective kind at one group size: a call moving
/// bytes_sent bytes takes alpha + beta * bytes_sent seconds.
struct alpha_beta {
  double alpha = 0;     ///< seconds per call
  double beta = 0;      ///< seconds per byte sent (the counters' bytes_sent)
  double residual = 0;  ///< the fit's root-mean-square relative error; 0 if not fitted

  double seconds(double bytes_sent) const { return alpha + beta * bytes_sent; }
  friend bool operator==(const alpha_beta&, const alpha_beta&) = default;
};

/// @brief One timing: a call that sent bytes_sent bytes took seconds.
struct timing_point {
  double bytes_sent = 0;
  double seconds = 0;
  friend bool operator==(const timing_point&, const timing_point&) = default;
};

// fit_alpha_beta(points): the line alpha + beta * bytes_sent through the points, by least
// squares of the *relative* error (each point weighted by 1 / seconds^2). Plain least squares
// would let the largest messages decide everything and leave alpha, the small messages' whole
// cost, at the mercy of their noise; relative errors weigh an 8-byte call and a 16 MiB one
// alike, which is what a prediction "within 25%" asks of every size. alpha and beta are kept
// non-negative (a negative one is fixed at 0 and the other refitted), so the cost rises with
// bytes. Needs two distinct sizes and positive times; throws meshpp::error otherwise.
inline alpha_beta fit_alpha_beta(std::span<const timing_point> points);

// monotone_in_bytes(points): the points sorted by bytes, their times replaced by the
// non-decreasing sequence nearest to them in least squares (isotonic regression, pool adjacent
// violators: a run that falls is replaced by its mean). Unlike a running maximum, one high
// outlier moves its neighbours only by its share of their mean. Non-decreasing input comes back
// unchanged, bit for bit.
inline std::vector<timing_point> monotone_in_bytes(std::vector<timing_point> points);

/// @brief A machine's costs: per collective kind and measured group size an alpha-beta line and
/// the measured times it was fitted to; the local rates of products and memory passes. Made by
/// examples/calibrate (load), or machine_model::defaults() where no calibration was run.
class machine_model {
 public:
  static constexpr std::string_view format_header = "meshpp-machine";
  static constexpr int format_version = 1;

  std::string source;                  ///< where the figures come from (free text)
  double gemm_flops_per_second = 0;    ///< local cblas_sgemm rate of one rank, all ranks busy
  double stream_bytes_per_second = 0;  ///< bytes read and written by a fused pass, one rank
  double memory_bytes_per_rank = 0;    ///< memory a rank may use; 0: unknown (no limit known)

  // defaults(): the model used when no calibration file exists; its source says so
  static machine_model defaults();

  // load(path): the model in a file written by save (or by examples/calibrate)
  static machine_model load(const std::string& path);
  // load_or_defaults(path): load(path) if the file exists, else defaults()
  static machine_model load_or_defaults(const std::string& path) {
    return std::filesystem::exists(path) ? load(path) : defaults();
  }
  // parse(in, name): the model in a file's text; name is the file named in errors
  static machine_model parse(std::istream& in, const std::string& name);

  // save(path): writes text(); throws meshpp::error naming path if it cannot
  void save(const std::string& path) const;
  // text(): the model in the file format
  std::string text() const;

  // set(c, p, line, measured): collective c in groups of p >= 2 ranks costs `line`; `measured`,
  // if given, are the times it was fitted to (distinct sizes, any order), which seconds() then
  // follows within their range. They are kept made non-decreasing in bytes (monotone_in_bytes):
  // a median that noise pushed above a larger size's would make a larger message look cheaper.
  void set(collective c, int p, const alpha_beta& line, std::vector<timing_point> measured = {});
  // find(c, p): the line measured at exactly p ranks, or nullptr
  const alpha_beta* find(collective c, int p) const {
    const auto it = costs_.find({c, p});
    return it == costs_.end() ? nullptr : &it->second.line;
  }
  // measured(c, p): the times kept at exactly p ranks, ascending in bytes (empty: none)
  std::span<const timing_point> measured(collective c, int p) const {
    const auto it = costs_.find({c, p});
    return it == costs_.end() ? std::span<const timing_point>() : it->second.measured;
  }
  // group_sizes(c): the group sizes measured for collective c, ascending
  std::vector<int> group_sizes(collective c) const {
    std::vector<int> sizes;
    for (const auto& [key, cost] : costs_)
      if (key.first == c) sizes.push_back(key.second);
    return sizes;
  }
  // has_figures(c, p): whether c was measured (or set) for groups of exactly p ranks, rather
  // than priced from other group sizes by seconds()
  bool has_figures(collective c, int p) const { return costs_.count({c, p}) != 0; }

  // seconds(c, p, bytes_sent): the time of one call of c in a group of p ranks sending
  // bytes_sent bytes (the counters' figure: for broadcast the root's, for gather a
  // contributor's). p = 1: 0 (no call is made). At a measured p: between the smallest and
  // largest measured sizes, the measured times joined by straight lines (a piecewise
  // alpha-beta model: one line cannot follow both the in-cache and the out-of-cache rates of
  // shared-memory MPI, docs/plans.md, "Machine model and calibration"); below them the smallest's
  // time (latency); above them the largest's bandwidth, t_last * bytes / bytes_last; with no
  // measured times, the line. Between measured group sizes: interpolated linearly in log p;
  // beyond them: the nearest's, its alpha scaled by log p / log p_nearest (small messages go
  // by trees and recursive doubling, log p steps; bytes_sent already carries the algorithms'
  // factors of p). A mesh's sub-groups (a mesh dim of a larger mesh) are priced this way from
  // the sizes calibrated. Non-decreasing in bytes_sent.
  double seconds(collective c, int p, double bytes_sent) const;
  // gemm_seconds(flops): local products of that many flops (2 m n k for one gemm)
  double gemm_seconds(double flops) const {
    return flops / rate("gemm_seconds", gemm_flops_per_second);
  }
  // set_gemm_rate(shape, flops_per_second): the rate measured for gemms of this shape (by
  // time_gemms, plan/search.hpp: per process, not kept in the file, so a model with such rates
  // no longer equals its saved and loaded copy)
  void set_gemm_rate(const gemm_shape& shape, double flops_per_second) {
    if (!(flops_per_second > 0) || !std::isfinite(flops_per_second))
      throw error("meshpp::machine_model::set_gemm_rate: a rate must be finite and > 0");
    gemm_rates_[shape] = flops_per_second;
  }
  // has_gemm_rate(shape): whether a rate was measured for this shape
  bool has_gemm_rate(const gemm_shape& shape) const { return gemm_rates_.count(shape) != 0; }
  // gemm_seconds(shape, calls): `calls` gemms of this shape, at its measured rate if there is
  // one, else at gemm_flops_per_second
  double gemm_seconds(const gemm_shape& shape, double calls) const {
    const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                         static_cast<double>(shape.k) * calls;
    const auto it = gemm_rates_.find(shape);
    return it == gemm_rates_.end() ? gemm_seconds(flops) : flops / it->second;
  }
  // stream_seconds(bytes): a memory-bound pass reading and writing that many bytes
  double stream_seconds(double bytes) const {
    return bytes / rate("stream_seconds", stream_bytes_per_second);
  }

  // report(): a table of the figures: kind, p, alpha in microseconds, 1/beta in GB/s, the
  // line's residual, the measured sizes kept
  std::string report() const;

  friend bool operator==(const machine_model&, const machine_model&) = default;

 private:
  std::map<gemm_shape, double> gemm_rates_;
  struct costs {
    alpha_beta line;
    std::vector<timing_point> measured;  // ascending in bytes, non-decreasing in seconds
    friend bool operator==(const costs&, const costs&) = default;
  };
  static double seconds_at(const costs& k, double bytes_sent);
  static void check_group_size(const char* who, int p, int least) {
    if (p < least) {
      throw error(std::string("meshpp::machine_model::") + who + ": group size " +
                  std::to_string(p) + " (at least " + std::to_string(least) + " expected)");
    }
  }
  static double rate(const char* who, double r) {
    if (!(r > 0) || !std::isfinite(r)) {
      throw error(std::string("meshpp::machine_model::") + who +
                  ": the model has no positive rate (calibrate with examples/calibrate, or use "
                  "machine_model::defaults())");
    }
    return r;
  }

  std::map<std::pair<collective, int>, costs> costs_;
};

namespace detail {
// format_number(v): the shortest text that reads back as v
inline std::string format_number(double v) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}
// parse_number(text): the double text spells, all of it, or nothing
inline std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}
// collective_named(name): the collective of that name, if any
inline std::optional<collective> collective_named(std::string_view name) {
  for (std::size_t c = 0; c < collective_kinds; ++c) {
    if (collective_name(static_cast<collective>(c)) == name) return static_cast<collective>(c);
  }
  return std::nullopt;
}
}  // namespace detail

inline alpha_beta fit_alpha_beta(std::span<const timing_point> points) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (const auto& q : points) {
    if (!(q.seconds > 0) || !std::isfinite(q.seconds) || !(q.bytes_sent >= 0) ||
        !std::isfinite(q.bytes_sent)) {
      throw error("meshpp::fit_alpha_beta: a point of " + detail::format_number(q.bytes_sent) +
                  " bytes in " + detail::format_number(q.seconds) +
                  " s (times must be > 0, sizes >= 0, both finite)");
    }
    low = std::min(low, q.bytes_sent);
    high = std::max(high, q.bytes_sent);
  }
  if (!(high > low)) {
    throw error("meshpp::fit_alpha_beta: " + std::to_string(points.size()) +
                " points; at least two distinct sizes are needed to tell alpha from beta");
  }
  // Weighted normal equations of t ~ a + b x with weights 1/t^2. x is scaled by its largest
  // value first, so the sums stay near 1 whatever the byte counts.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const auto& q : points) {
    const double w = 1 / (q.seconds * q.seconds), x = q.bytes_sent / high;
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    st += w * q.seconds;
    sxt += w * x * q.seconds;
  }
  const double det = sw * sxx - sx * sx;
  double a = (sxx * st - sx * sxt) / det, b = (sw * sxt - sx * st) / det;
  if (b < 0) {  // time falling with size: noise; a constant fits best
    b = 0;
    a = st / sw;
  } else if (a < 0) {  // a line through the origin fits best
    a = 0;
    b = sxt / sxx;
  }
  alpha_beta fit{a, b / high, 0};
  double squares = 0;
  for (const auto& q : points) {
    const double relative = (fit.seconds(q.bytes_sent) - q.seconds) / q.seconds;
    squares += relative * relative;
  }
  fit.residual = std::sqrt(squares / static_cast<double>(points.size()));
  return fit;
}

inline std::vector<timing_point> monotone_in_bytes(std::vector<timing_point> points) {
  std::stable_sort(points.begin(), points.end(), [](const timing_point& a, const timing_point& b) {
    return a.bytes_sent < b.bytes_sent;
  });
  // blocks of pooled points: their mean time and how many points each holds
  std::vector<std::pair<double, std::size_t>> blocks;
  for (const auto& q : points) {
    blocks.push_back({q.seconds, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].first > blocks.back().first) {
      const auto [mean, count] = blocks.back();
      blocks.pop_back();
      auto& [into_mean, into_count] = blocks.back();
      into_mean =
          (into_mean * static_cast<double>(into_count) + mean * static_cast<double>(count)) /
          static_cast<double>(into_count + count);
      into_count += count;
    }
  }
  std::size_t at = 0;
  for (const auto& [mean, count] : blocks) {
    for (std::size_t i = 0; i < count; ++i) points[at++].seconds = mean;
  }
  return points;
}

inline void machine_model::set(collective c, int p, const alpha_beta& line,
                               std::vector<timing_point> measured) {
  const auto fail = [&](const std::string& what) {
    return error("meshpp::machine_model::set(" + std::string(collective_name(c)) + ", " +
                 std::to_string(p) + "): " + what);
  };
  check_group_size("set", p, 2);
  for (const double v : {line.alpha, line.beta, line.residual}) {
    if (!std::isfinite(v) || v < 0) throw fail("alpha, beta and residual must be finite and >= 0");
  }
  for (const auto& q : measured) {
    if (!std::isfinite(q.bytes_sent) || q.bytes_sent < 0 || !std::isfinite(q.seconds) ||
        !(q.seconds > 0)) {
      throw fail("a measured time of " + detail::format_number(q.seconds) + " s at " +
                 detail::format_number(q.bytes_sent) +
                 " bytes (times must be > 0, sizes >= 0, both finite)");
    }
  }
  measured = monotone_in_bytes(std::move(measured));
  for (std::size_t i = 1; i < measured.size(); ++i) {
    if (measured[i].bytes_sent == measured[i - 1].bytes_sent)
      throw fail("two measured times at " + detail::format_number(measured[i].bytes_sent) +
                 " bytes");
  }
  costs_[{c, p}] = {line, std::move(measured)};
}

inline double machine_model::seconds_at(const costs& k, double bytes_sent) {
  const auto& m = k.measured;
  if (m.empty()) return k.line.seconds(bytes_sent);
  if (bytes_sent <= m.front().bytes_sent) return m.front().seconds;
  if (bytes_sent >= m.back().bytes_sent) {
    // past the largest size: its bandwidth (a line through the origin, never below t_last)
    return m.back().bytes_sent > 0 ? m.back().seconds * (bytes_sent / m.back().bytes_sent)
                                   : m.back().seconds;
  }
  const auto above =
      std::upper_bound(m.begin(), m.end(), bytes_sent,
                       [](double b, const timing_point& q) { return b < q.bytes_sent; });
  const timing_point &lo = *(above - 1), &hi = *above;
  const double w = (bytes_sent - lo.bytes_sent) / (hi.bytes_sent - lo.bytes_sent);
  return lo.seconds + w * (hi.seconds - lo.seconds);
}

inline double machine_model::seconds(collective c, int p, double bytes_sent) const {
  if (!(bytes_sent >= 0) || !std::isfinite(bytes_sent)) {
    throw error("meshpp::machine_model::seconds: bytes_sent must be a finite number >= 0, not " +
                detail::format_number(bytes_sent));
  }
  check_group_size("seconds", p, 1);
  if (p == 1) return 0;
  if (const auto exact = costs_.find({c, p}); exact != costs_.end())
    return seconds_at(exact->second, bytes_sent);
  const std::vector<int> sizes = group_sizes(c);
  if (sizes.empty()) {
    throw error("meshpp::machine_model::seconds: no figures for " +
                std::string(collective_name(c)) +
                " (calibrate with examples/calibrate, or use machine_model::defaults())");
  }
  const auto above = std::upper_bound(sizes.begin(), sizes.end(), p);
  if (above == sizes.begin() || above == sizes.end()) {  // beyond the measured sizes
    const int nearest = above == sizes.begin() ? sizes.front() : sizes.back();
    const costs& k = costs_.at({c, nearest});
    const double scale =
        std::log2(static_cast<double>(p)) / std::log2(static_cast<double>(nearest));
    // adding a constant keeps the time non-decreasing in bytes; below p_nearest it is a
    // saving, never more than the whole time
    return std::max(0.0, seconds_at(k, bytes_sent) + (scale - 1) * k.line.alpha);
  }
  const int p0 = *(above - 1), p1 = *above;
  const double w = std::log(static_cast<double>(p) / p0) / std::log(static_cast<double>(p1) / p0);
  return (1 - w) * seconds_at(costs_.at({c, p0}), bytes_sent) +
         w * seconds_at(costs_.at({c, p1}), bytes_sent);
}

inline machine_model machine_model::defaults() {
  // Stand-ins until a machine is calibrated: examples/calibrate at 2 ranks on the 2-core Debian
  // 12 VM meshpp is developed on (Open MPI 4.1.4 over shared memory, OpenBLAS 0.3.21 one thread
  // a rank), run with the machine idle (docs/plans.md, "Machine model and calibration"),
  // rounded to two digits. Lines only, at 2 ranks; other group sizes by the log p rule of
  // seconds(). A line is off by up to 2x on that machine (16 MiB allreduced in 5.3 ms, the line
  // says 2.8 ms; 1 MiB in 0.11 ms, the line 0.18 ms): calibrate for anything that matters.
  machine_model m;
  m.source =
      "default model (no calibration file): examples/calibrate's lines on a 2-core Debian 12 VM, "
      "Open MPI 4.1 shared memory, OpenBLAS one thread; run examples/calibrate for this machine";
  m.gemm_flops_per_second = 1.0e11;
  m.stream_bytes_per_second = 2.0e10;
  const auto line = [&m](collective c, double alpha, double gigabytes_per_second) {
    m.set(c, 2, {alpha, 1e-9 / gigabytes_per_second, 0});
  };
  line(collective::allreduce, 2.3e-7, 6.0);
  line(collective::allgather, 2.2e-7, 6.7);
  line(collective::alltoall, 2.3e-7, 7.4);
  line(collective::reduce_scatter, 2.2e-7, 2.6);
  line(collective::broadcast, 1.2e-7, 10.0);
  line(collective::permute, 3.2e-7, 9.6);
  line(collective::gather, 2.1e-7, 4.4);
  return m;
}

inline std::string machine_model::text() const {
  std::string out = std::string(format_header) + " " + std::to_string(format_version) + "\n";
  out += "# meshpp machine model (include/meshpp/plan/machine.hpp): seconds per call (alpha),\n";
  out += "# seconds per byte sent (beta), measured seconds at bytes sent, local rates per rank\n";
  if (!source.empty()) out += "source " + source + "\n";
  const auto line = [&out](const std::string& key, double v) {
    out += key + " " + detail::format_number(v) + "\n";
  };
  line("gemm.flops_per_second", gemm_flops_per_second);
  line("stream.bytes_per_second", stream_bytes_per_second);
  if (memory_bytes_per_rank > 0) line("memory.bytes_per_rank", memory_bytes_per_rank);
  for (const auto& [key, k] : costs_) {
    const std::string prefix =
        std::string(collective_name(key.first)) + "." + std::to_string(key.second) + ".";
    line(prefix + "alpha", k.line.alpha);
    line(prefix + "beta", k.line.beta);
    if (k.line.residual > 0) line(prefix + "residual", k.line.residual);
    for (const auto& q : k.measured)
      line(prefix + "seconds_at." + detail::format_number(q.bytes_sent), q.seconds);
  }
  return out;
}

inline void machine_model::save(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const std::string t = text();
  f.write(t.data(), static_cast<std::streamsize>(t.size()));
  f.close();
  if (!f) throw error("meshpp::machine_model::save: cannot write " + path);
}

inline machine_model machine_model::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw error("meshpp::machine_model::load: cannot open " + path +
                " (run examples/calibrate under mpiexec to make it)");
  }
  return parse(f, path);
}

inline machine_model machine_model::parse(std::istream& in, const std::string& name) {
  machine_model m;
  std::size_t number = 0;
  const auto fail = [&](const std::string& what) -> error {
    return error("meshpp::machine_model::load: " + name + ":" + std::to_string(number) + ": " +
                 what);
  };
  std::string line;
  if (!std::getline(in, line)) {
    number = 1;
    throw fail("empty file; expected '" + std::string(format_header) + " " +
               std::to_string(format_version) + "'");
  }
  number = 1;
  const std::string expected = std::string(format_header) + " " + std::to_string(format_version);
  if (line != expected) {
    throw fail("the first line is '" + line + "'; expected '" + expected + "'" +
               (line.rfind(format_header, 0) == 0 ? " (a format version this meshpp cannot read)"
                                                  : " (not a meshpp machine file)"));
  }
  std::map<std::string, std::size_t> seen;  // key -> line
  // pending alpha/beta per (kind, p), with the line each was given on
  struct partial {
    std::optional<double> alpha, beta, residual;
    std::vector<timing_point> measured;
    std::size_t line = 0;
  };
  std::map<std::pair<collective, int>, partial> partials;
  bool have_gemm = false, have_stream = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (const auto [it, fresh] = seen.emplace(key, number); !fresh) {
      throw fail("'" + key + "' given twice (first on line " + std::to_string(it->second) + ")");
    }
    if (key == "source") {
      m.source = value;
      continue;
    }
    const std::optional<double> v = detail::parse_number(value);
    if (!v) throw fail("'" + key + "' needs a number, not '" + value + "'");
    if (!std::isfinite(*v) || *v < 0) {
      throw fail("'" + key + "' must be finite and >= 0, not " + value);
    }
    if (key == "gemm.flops_per_second" || key == "stream.bytes_per_second") {
      if (!(*v > 0)) throw fail("'" + key + "' must be > 0");
      (key[0] == 'g' ? m.gemm_flops_per_second : m.stream_bytes_per_second) = *v;
      (key[0] == 'g' ? have_gemm : have_stream) = true;
      continue;
    }
    if (key == "memory.bytes_per_rank") {
      m.memory_bytes_per_rank = *v;
      continue;
    }
    // <collective>.<p>.<alpha|beta|residual>, <collective>.<p>.seconds_at.<bytes>
    const std::size_t dot1 = key.find('.');
    const std::size_t dot2 = dot1 == std::string::npos ? dot1 : key.find('.', dot1 + 1);
    const std::size_t dot3 = dot2 == std::string::npos ? dot2 : key.find('.', dot2 + 1);
    const auto kind =
        dot1 == std::string::npos ? std::nullopt : detail::collective_named(key.substr(0, dot1));
    const std::string field =
        dot2 == std::string::npos ? "" : key.substr(dot2 + 1, dot3 - std::min(dot3, dot2 + 1));
    const bool plain =
        dot3 == std::string::npos && (field == "alpha" || field == "beta" || field == "residual");
    const bool at_size = dot3 != std::string::npos && field == "seconds_at";
    if (!kind || !(plain || at_size)) {
      throw fail("unknown key '" + key +
                 "' (expected gemm.flops_per_second, stream.bytes_per_second, "
                 "memory.bytes_per_rank, source, <collective>.<p>.alpha|beta|residual or "
                 "<collective>.<p>.seconds_at.<bytes>)");
    }
    const std::string group = key.substr(dot1 + 1, dot2 - dot1 - 1);
    int p = 0;
    const auto [end, ec] = std::from_chars(group.data(), group.data() + group.size(), p);
    if (ec != std::errc() || end != group.data() + group.size() || p < 2) {
      throw fail("'" + key + "': the group size '" + group + "' is not an integer >= 2");
    }
    partial& entry = partials[{*kind, p}];
    if (entry.line == 0) entry.line = number;
    if (at_size) {
      const std::optional<double> bytes = detail::parse_number(key.substr(dot3 + 1));
      if (!bytes || !std::isfinite(*bytes)) {
        throw fail("'" + key + "': '" + key.substr(dot3 + 1) + "' is not a number of bytes");
      }
      if (!(*v > 0)) throw fail("'" + key + "': a measured time must be > 0");
      entry.measured.push_back({*bytes, *v});
      continue;
    }
    (field == "alpha" ? entry.alpha : field == "beta" ? entry.beta : entry.residual) = *v;
  }
  for (const auto& [key, entry] : partials) {
    if (!entry.alpha || !entry.beta) {
      number = entry.line;
      throw fail(std::string(collective_name(key.first)) + "." + std::to_string(key.second) +
                 " has " + (entry.alpha ? "an alpha but no beta" : "a beta but no alpha"));
    }
    // the times as set() keeps them: a file not written by save() gets the same checks
    number = entry.line;
    try {
      m.set(key.first, key.second, {*entry.alpha, *entry.beta, entry.residual.value_or(0)},
            entry.measured);
    } catch (const error& e) {
      throw fail(e.what());
    }
  }
  if (!have_gemm || !have_stream) {
    ++number;
    throw fail(std::string("the file ends without ") +
               (have_gemm ? "stream.bytes_per_second" : "gemm.flops_per_second"));
  }
  return m;
}

inline std::string machine_model::report() const {
  std::string out =
      "collective          p     alpha us    1/beta GB/s   residual   measured sizes\n";
  char row[160];
  for (const auto& [key, k] : costs_) {
    std::snprintf(row, sizeof row, "%-16s %4d %12.3f %14.3f %9.1f%% %16zu\n",
                  std::string(collective_name(key.first)).c_str(), key.second, k.line.alpha * 1e6,
                  k.line.beta > 0 ? 1e-9 / k.line.beta : std::numeric_limits<double>::infinity(),
                  k.line.residual * 100, k.measured.size());
    out += row;
  }
  std::snprintf(row, sizeof row, "sgemm %.3g GFLOP/s, fused pass %.3g GB/s a rank",
                gemm_flops_per_second * 1e-9, stream_bytes_per_second * 1e-9);
  out += row;
  if (memory_bytes_per_rank > 0) {
    std::snprintf(row, sizeof row, ", memory %.3g GiB a rank",
                  memory_bytes_per_rank / (1024.0 * 1024 * 1024));
    out += row;
  }
  return out + "\n";
}

}  // namespace meshpp
