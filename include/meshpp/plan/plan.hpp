// meshpp/plan/plan.hpp — what a step will communicate, compute and allocate, before it runs.
//
//   auto p = mp::make_plan<mesh_t>({2, 2}, [&](const mesh_t& m) {
//     model net(m, sizes);            // variables, optimizer slots: their bytes are counted too
//     auto loss = net.loss(m);        // forward
//     mp::backward(loss);             // backward, gradient buckets
//     opt.step();                     // optimizer
//   });
//   std::cout << p.report();          // per operation: collectives, values, bytes, flops, memory
//
// The step runs once on a planned mesh (mesh::planned): a mesh of the given sizes on which this
// process stands for one rank (`as_rank`, default 0), with no communicators. Every operation
// runs its real code down to the point where it would move or compute data: the layouts, the
// choice of algorithm (ring, reduce_scatter, moved operands), the deferred partial sums and the
// gradient buckets are decided exactly as in a real run, and each collective is counted with
// the same formula (core/counters.hpp); then no MPI call is made and no product, fused
// expression or fill is computed. So the plan's counts are, by construction and by test
// (tests/mpi/plan/plan.cpp), the counters a real run on that rank records, per operation.
//
// What a plan does not do: read values. A tensor's slice is allocated (untouched memory: the
// operating system gives it pages only when written) and holds no meaningful values, so a step
// whose control flow depends on values (a loss read with item(), ids chosen from data) plans
// the path its garbage takes; the operations themselves never branch on values. Per-operation
// FLOPs are einsum's (2·m·n·k per local product), which dominate; component-wise expressions
// are not counted. Memory: `bytes_made` is what the operation allocated for its results on
// this rank, not the peak of what is live at once.
//
// Drawn per operation: p.pictures(i) are the layouts of the tensors operation i made, and
// p.draw(i) is their SVG (io/draw.hpp), which rank holds which block of each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/text.hpp"
#include "meshpp/io/draw.hpp"

namespace meshpp {

/// @brief The plan of one step on one rank of a mesh: per operation and in total.
class plan {
 public:
  // plan(mesh_text, mesh_sizes, rank, counts): the counters (by operation) of a step planned
  // on `rank` of a mesh of these sizes
  plan(std::string mesh_text, std::vector<int> mesh_sizes, int rank, counters counts)
      : mesh_text_(std::move(mesh_text)),
        mesh_sizes_(std::move(mesh_sizes)),
        rank_(rank),
        counts_(std::move(counts)) {}

  // operations(): per operation and phase, in the order they first ran
  const std::vector<operation_count>& operations() const { return counts_.operations(); }
  // counts(): the planned mesh's counters whole (not timed: a plan runs nothing)
  const counters& counts() const { return counts_; }
  int rank() const { return rank_; }
  // mesh(): "[rows:2, cols:2]"; mesh_sizes(): the sizes in mesh order
  const std::string& mesh() const { return mesh_text_; }
  const std::vector<int>& mesh_sizes() const { return mesh_sizes_; }
  // group_size(mask): the ranks in a group over the mesh dims in the bit set mask
  int group_size(unsigned mask) const { return detail::group_size(mesh_sizes_, mask); }
  // mesh_dims_text(mask): "rows,cols"
  std::string mesh_dims_text(unsigned mask) const { return counts_.mesh_dims_text(mask); }

  // total(c): collective c over every operation and set of mesh dims; flops(): einsum's
  // (the counters keep both whole as well as by operation)
  collective_count total(collective c) const { return counts_.total(c); }
  std::uint64_t flops() const { return counts_.einsum_flops(); }
  std::uint64_t bytes_made() const {
    std::uint64_t b = 0;
    for (const auto& o : operations()) b += o.bytes_made;
    return b;
  }
  // gemms(): the gemm calls of every operation, summed per shape, in shape order
  std::vector<gemm_count> gemms() const {
    std::vector<gemm_count> out;
    for (const auto& o : operations())
      for (const auto& g : o.gemms) add_gemms(out, g.shape, g.calls);
    sort_by_shape(out);
    return out;
  }

  // pictures(i): the layouts of the tensors operation i made (its results and any tensor it
  // made on the way), one picture each, titled with the operation; draw(i, columns) draws them
  // side by side in one SVG (io/draw.hpp), as the paper's figures show a layout
  std::vector<layout_picture> pictures(std::size_t i) const {
    const auto& ops = operations();
    if (i >= ops.size()) {
      throw error("meshpp::plan::pictures: operation " + std::to_string(i) + " of a plan of " +
                  std::to_string(ops.size()));
    }
    std::vector<layout_picture> out;
    for (const auto& l : ops[i].layouts) {
      layout_picture p;
      p.title = ops[i].phase + ": " + ops[i].name + ": tensor<" + l.type + "> [";
      for (std::size_t d = 0; d < l.dims.size(); ++d)
        detail::append(p.title, d ? ", " : "", l.dims[d], ':', l.sizes[d]);
      p.title += "]";
      p.dim_names = l.dims;
      p.sizes = l.sizes;
      p.mesh_dim_of_dim = l.mesh_dim_of_dim;
      p.mesh_dim_names = counts_.mesh_dim_names();
      p.mesh_sizes = mesh_sizes_;
      out.push_back(std::move(p));
    }
    return out;
  }
  std::string draw(std::size_t i, std::size_t columns = 2) const {
    const auto p = pictures(i);
    if (p.empty()) {
      throw error("meshpp::plan::draw: operation " + std::to_string(i) + " (" +
                  operations()[i].name + ") made no tensor");
    }
    return draw_svg(p, std::min(columns, p.size()));
  }

  /// A table: one line per operation (phase, runs, flops, bytes made, name), then one per
  /// collective it makes (kind, mesh dims, calls, values, bytes sent), then the totals.
  std::string report() const {
    std::string out =
        "plan of one step on rank " + std::to_string(rank_) + " of mesh " + mesh_text_ + "\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-10s %5s %14s %14s  %s\n", "phase", "runs", "flops",
                  "bytes made", "operation");
    out += line;
    for (const auto& o : operations()) {
      std::snprintf(line, sizeof line, "%-10s %5llu %14.6g %14llu  %s\n", o.phase.c_str(),
                    static_cast<unsigned long long>(o.runs), static_cast<double>(o.flops),
                    static_cast<unsigned long long>(o.bytes_made), o.name.c_str());
      out += line;
      for (const auto& e : o.collectives) {
        std::snprintf(
            line, sizeof line, "%32s %-14s over %-12s %4llu calls %12llu values %12llu B\n", "",
            std::string(collective_name(e.kind)).c_str(), counts_.mesh_dims_text(e.mask).c_str(),
            static_cast<unsigned long long>(e.count.calls),
            static_cast<unsigned long long>(e.count.values),
            static_cast<unsigned long long>(e.count.bytes_sent));
        out += line;
      }
    }
    out += "total:\n";
    for (std::size_t c = 0; c < collective_kinds; ++c) {
      const auto t = total(static_cast<collective>(c));
      if (t.calls == 0) continue;
      std::snprintf(line, sizeof line, "  %-14s %6llu calls %14llu values %14llu bytes sent\n",
                    std::string(collective_name(static_cast<collective>(c))).c_str(),
                    static_cast<unsigned long long>(t.calls),
                    static_cast<unsigned long long>(t.values),
                    static_cast<unsigned long long>(t.bytes_sent));
      out += line;
    }
    std::snprintf(line, sizeof line, "  einsum flops %.6g, bytes made %llu\n",
                  static_cast<double>(flops()), static_cast<unsigned long long>(bytes_made()));
    return out + line;
  }

 private:
  std::string mesh_text_;
  std::vector<int> mesh_sizes_;
  int rank_;
  counters counts_;
};

/// make_plan<Mesh>(sizes, step, as_rank): runs step(mesh) once on a planned mesh of these sizes
/// standing for rank as_rank, and returns what it would communicate, compute and allocate.
/// No communication: callable from any process, on any number of ranks (each plans alone).
/// Throws meshpp::error for sizes no mesh has or a rank outside the mesh, and what step throws.
template <class Mesh, class Step>
requires is_mesh_v<Mesh> plan make_plan(const typename Mesh::coordinates_type& sizes, Step&& step,
                                        int as_rank = 0) {
  const Mesh m = Mesh::planned(sizes, as_rank);
  std::forward<Step>(step)(m);
  return plan(m.describe(), std::vector<int>(sizes.begin(), sizes.end()), as_rank, m.counters());
}

}  // namespace meshpp
