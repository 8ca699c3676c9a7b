// meshpp/plan/detail/enumerate_report.hpp — the text of a layout enumeration's table and report
// (plan/enumerate.hpp: layout_enumeration::table, enumeration_report): the table's heading,
// each candidate's figures, and the report's first lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/plan/search.hpp"  // step_cost

namespace meshpp::detail::enumeration {

// table_heading(): the table's first line, its columns' names
inline std::string table_heading() {
  char line[256];
  std::snprintf(line, sizeof line, "%-4s %10s %10s %10s %10s %8s %10s %10s %10s  ", "rank",
                "step ms", "compute", "passes", "comm", "GFLOP", "ar calls", "ar values",
                "MiB made");
  return std::string(line) + "splits (fits)\n";
}

// table_figures(rank, cost, flops, allreduce): a candidate's line of the table up to its
// splits: its rank (from 1), every term of its price, its flops, its estimated allreduce calls
// and values, and the bytes it makes
inline std::string table_figures(std::size_t rank, const step_cost& cost, std::uint64_t flops,
                                 const meshpp::collective_count& allreduce) {
  char line[256];  // the figures; the splits are appended, of any length
  std::snprintf(line, sizeof line, "%-4zu %10.3f %10.3f %10.3f %10.3f %8.3f %10llu %10llu %10.1f  ",
                rank, 1e3 * cost.total(), 1e3 * cost.compute, 1e3 * cost.passes,
                1e3 * cost.communication, 1e-9 * static_cast<double>(flops),
                static_cast<unsigned long long>(allreduce.calls),
                static_cast<unsigned long long>(allreduce.values),
                static_cast<double>(cost.bytes_made) / (1 << 20));
  return line;
}

// report_heading(dims, candidates, seconds, unpriced): the report's line with the model's dims
// and the candidates counted and the seconds it took, then the rows priced without
// communication, if any
inline std::string report_heading(std::size_t dims, std::size_t candidates, double seconds,
                                  const std::vector<std::string>& unpriced) {
  char line[256];
  std::snprintf(line, sizeof line,
                "every layout of the model's %zu dims, estimated (plan/enumerate.hpp): %zu "
                "candidates in %.2f s\n",
                dims, candidates, seconds);
  std::string out = line;
  if (!unpriced.empty()) {
    out += "priced without communication (no rule for them):";
    for (const auto& u : unpriced) out += "\n  " + u;
    out += "\n";
  }
  return out;
}

}  // namespace meshpp::detail::enumeration
