// meshpp/core/counters.hpp — what a mesh communicated and computed, per collective and
// per set of mesh dims (Mesh-TensorFlow prints the same kind of counters).
//
//   mesh.counters().values(collective::allreduce)      // values allreduced per processor
//   std::cout << mesh.counters().report();             // a table
//   mesh.counters().reset();
//
// "Values" are elements of this rank's slice handed to a collective (the paper's measure);
// "bytes sent" are what a bandwidth-optimal algorithm sends from this rank for it:
//   allreduce 2(p-1)/p·n·s, allgather (p-1)·n·s, reduce_scatter and alltoall (p-1)/p·n·s,
//   broadcast n·s from the root, permute n·s, gather to a root n·s (n values of s bytes, p
//   ranks in the group).
// A collective over mesh dims of size 1 is counted (its values are part of the op's
// semantics, as in the paper's table) but sends nothing and makes no MPI call; an allreduce
// over no mesh dims at all is not a collective and is not counted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshpp {

enum class collective {
  allreduce,
  allgather,
  alltoall,
  reduce_scatter,
  broadcast,
  permute,
  gather
};
inline constexpr std::size_t collective_kinds = 7;

inline constexpr std::string_view collective_name(collective c) {
  constexpr std::array<std::string_view, collective_kinds> names{
      "allreduce", "allgather", "alltoall", "reduce_scatter", "broadcast", "permute", "gather"};
  return names[static_cast<std::size_t>(c)];
}

/// @brief Calls, values and bytes of one collective over one set of mesh dims.
struct collective_count {
  std::uint64_t calls = 0;
  std::uint64_t values = 0;
  std::uint64_t bytes_sent = 0;
};

/// @brief The counters of one mesh. Recording is an array increment: no allocation, no lock
/// (a mesh is used by one thread per rank, as MPI communicators are).
class counters {
 public:
  /// @param mesh_dim_names the mesh dims in mesh order (bit i of a mask is dim i)
  explicit counters(std::vector<std::string> mesh_dim_names)
      : mesh_dim_names_(std::move(mesh_dim_names)) {
    for (auto& per_mask : by_kind_) per_mask.assign(std::size_t{1} << mesh_dim_names_.size(), {});
  }

  void record(collective c, unsigned mask, std::uint64_t values, std::uint64_t bytes_sent) {
    auto& k = by_kind_[static_cast<std::size_t>(c)][mask];
    ++k.calls;
    k.values += values;
    k.bytes_sent += bytes_sent;
  }
  void record_einsum(std::uint64_t flops) {
    ++einsum_calls_;
    einsum_flops_ += flops;
  }

  // at(c, mask): the count of collective c over the mesh dims in the bit set mask
  const collective_count& at(collective c, unsigned mask) const {
    return by_kind_[static_cast<std::size_t>(c)].at(mask);
  }
  // total(c): collective c over every set of mesh dims
  collective_count total(collective c) const {
    collective_count t;
    for (const auto& k : by_kind_[static_cast<std::size_t>(c)]) {
      t.calls += k.calls;
      t.values += k.values;
      t.bytes_sent += k.bytes_sent;
    }
    return t;
  }
  std::uint64_t values(collective c) const { return total(c).values; }
  std::uint64_t einsum_calls() const { return einsum_calls_; }
  std::uint64_t einsum_flops() const { return einsum_flops_; }

  void reset() {
    for (auto& per_mask : by_kind_) per_mask.assign(per_mask.size(), {});
    einsum_calls_ = 0;
    einsum_flops_ = 0;
  }

  /// A table of every non-zero counter: collective, mesh dims, calls, values, bytes sent.
  std::string report() const {
    std::string out = "collective       over                calls        values    bytes sent\n";
    char line[160];
    for (std::size_t c = 0; c < collective_kinds; ++c) {
      for (unsigned mask = 0; mask < by_kind_[c].size(); ++mask) {
        const auto& k = by_kind_[c][mask];
        if (k.calls == 0) continue;
        std::string over;
        for (std::size_t i = 0; i < mesh_dim_names_.size(); ++i) {
          if (!(mask & (1u << i))) continue;
          if (!over.empty()) over += ',';
          over += mesh_dim_names_[i];  // not `"," + std::string(..)`: a g++ 12 -Wrestrict warning
        }
        std::snprintf(line, sizeof line, "%-16s %-16s %8llu %13llu %13llu\n",
                      std::string(collective_name(static_cast<collective>(c))).c_str(),
                      over.empty() ? "(none)" : over.c_str(),
                      static_cast<unsigned long long>(k.calls),
                      static_cast<unsigned long long>(k.values),
                      static_cast<unsigned long long>(k.bytes_sent));
        out += line;
      }
    }
    std::snprintf(line, sizeof line, "einsum: %llu calls, %.6g local flops\n",
                  static_cast<unsigned long long>(einsum_calls_),
                  static_cast<double>(einsum_flops_));
    return out + line;
  }

 private:
  std::vector<std::string> mesh_dim_names_;
  std::array<std::vector<collective_count>, collective_kinds> by_kind_;
  std::uint64_t einsum_calls_ = 0;
  std::uint64_t einsum_flops_ = 0;
};

}  // namespace meshpp
