// meshpp/plan/enumerate.hpp — every legal layout of a model's dims over a mesh, priced from
// the model's operations without instantiating it: the search over layouts the program has
// not compiled.
//
//   const auto reference = mp::make_plan<mesh_t>({1}, step);  // nothing split: the model whole
//   mp::layout_enumeration e(reference, machine, /*memory budget per rank, bytes*/ 0);
//   const std::vector<mp::mesh_axis> mesh{{"rows", 2}, {"cols", 2}};
//   auto ranked = e.enumerate(mesh);                 // fastest first
//   e.time_gemm_shapes(mesh, ranked, 10);            // optional: the top at their shapes' rates
//   std::cout << e.table(mesh, ranked, 10);          // the top 10, then the code to paste
//
// A layout is a type, so a program can plan exactly (plan/plan.hpp) only the layouts it
// instantiated. This header prices the others from the operations of one reference plan, a
// plan of the step on a mesh of size 1 (every tensor whole, so its rows are the model: each
// operation's dims, global sizes, flops and bytes). Under a candidate layout (each model dim
// split over one mesh dim, or not split), an operation's rank-0 share follows from the local
// block of each dim (near-equal blocks, the first ones the longer: core/blocks.hpp), and its
// communication from the rules meshpp's operations follow:
//
//   einsum A x B -> C      flops x the local share of every dim of A, B and C; contracted
//                          dims (in A or B, not in C) split over mesh dims S: an allreduce of
//                          the local C over S
//   reduce A -> B          reduced dims split over S: an allreduce of the local B over S
//   take T at I -> C       T's taken dim split over S: an allreduce of the local C over S
//   softmax over d of T    d split over S: two allreduces (max and sum) of T's rows over S
//                          (where the reference split d, its reductions have rows of their
//                          own, priced as reductions); a layer_norm over d made row by row
//                          (forward, and backward's dx) likewise: mean and variance, or the
//                          backward's two means
//   attention q x k x v    the fused core of attention (nn/fused_attention.hpp): its gemm
//     -> o                 calls on rank 0's heads of its sequences, no communication; where
//                          the candidate splits length, memory, key or value the layer runs
//                          the separate operations: their flops x the local share of all the
//                          tile's dims, and their allreduces (forward: the scores over key,
//                          softmax's two over memory, the output over memory; backward: over
//                          length, value, memory, memory and length, for v's, p's, the
//                          softmax's, q's and k's gradients)
//   reshape A -> B         a renamed dim (rename<Old, New>) whose mesh dim changes: an
//                          allgather of the local A over its old mesh dim (then a local slice)
//   parameter gradients    the backward einsum making a parameter's gradient (C's dims are
//                          the parameter's), and the gradients no einsum makes (biases, norms,
//                          embedding tables: summed over the data dims, the dims of the ids a
//                          take reads, that the parameter lacks): allreduces over S, packed in
//                          buckets of bucket_bytes as the gradient buckets do
//   update of p            a sharded update ("update p (sharded)": Adam's) on p replicated
//                          over mesh dims R: an allgather over R of the others' shares, rank 0
//                          streaming its own share only (optimizer_slot::apply)
//
// and every row's bytes made and streamed scale with the local share of the tensors it made.
// The price is the search's (plan/search.hpp): compute at the calibrated sgemm rate, passes at
// the fused-pass rate, each collective at the alpha-beta cost of its kind and group size.
//
// It is an estimate, not a plan: where it and an exact plan of an instantiated layout differ,
// the plan is right. Known: in the backward pass meshpp adds partial sums flowing into one
// tensor before reducing them once (deferred partial sums); the estimate reduces each
// product's partial sum, so it overcounts those allreduces (tests/mpi/nn/transformer_plan.cpp
// compares the estimate with the exact plans).
//
// Its parts: the model read from the reference plan's operations
// (plan/detail/enumerate_model.hpp), the price of each kind of operation under a layout
// (plan/detail/enumerate_price.hpp), the text of the table and the report
// (plan/detail/enumerate_report.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/plan/detail/enumerate_model.hpp"
#include "meshpp/plan/detail/enumerate_price.hpp"
#include "meshpp/plan/detail/enumerate_report.hpp"
#include "meshpp/plan/machine.hpp"
#include "meshpp/plan/plan.hpp"
#include "meshpp/plan/search.hpp"  // step_cost, detail::time_gemm_list

namespace meshpp {

/// @brief One dim of a mesh to enumerate layouts over: name and size.
struct mesh_axis {
  std::string name;
  int size = 1;
};

/// @brief The estimated communication of one step under a layout: per kind, calls and values.
struct estimated_collectives {
  collective_count allreduce, allgather, alltoall;
  collective_count& of(collective c) {
    return c == collective::allgather  ? allgather
           : c == collective::alltoall ? alltoall
                                       : allreduce;
  }
};

/// @brief Every legal layout of a model's dims over a mesh, each priced from a reference plan.
class layout_enumeration {
 public:
  /// @brief A layout: for each dim of the model (dims()), the mesh dim splitting it, or -1.
  struct candidate {
    std::vector<int> axis_of_dim;
    step_cost cost;
    estimated_collectives collectives;
    std::uint64_t flops = 0;
    bool fits = true;
  };

  // layout_enumeration(reference, machine, memory_budget, bucket_bytes): `reference` is a plan
  // of the step on a mesh whose every dim has size 1. memory_budget in bytes per rank, 0: the
  // machine's (or none). Throws meshpp::error for a reference on a mesh of more than one rank.
  layout_enumeration(const plan& reference, machine_model machine, double memory_budget = 0,
                     double bucket_bytes = 4 << 20)
      : machine_(std::move(machine)),
        budget_(memory_budget > 0 ? memory_budget : machine_.memory_bytes_per_rank),
        bucket_bytes_(bucket_bytes) {
    for (const int s : reference.mesh_sizes()) {
      if (s != 1) {
        throw error(
            "meshpp::layout_enumeration: the reference plan must be of a mesh of one rank "
            "(every tensor whole); got mesh " +
            reference.mesh());
      }
    }
    model_ = detail::enumeration::read_model(reference);
  }

  // dims(): the model's dims, in first-use order; size(d): a dim's global size
  const std::vector<std::string>& dims() const { return model_.dims; }
  std::size_t size(std::size_t d) const { return model_.sizes.at(d); }
  const machine_model& machine() const { return machine_; }
  // unpriced(): the reference's rows that communicated but that no rule prices (an explicit
  // relayout, a reshape that merges or splits dims, an einsum with output rules, a shift),
  // "phase name" each: every estimate prices them without communication
  const std::vector<std::string>& unpriced() const { return model_.unpriced; }

  /// estimate(mesh, axis_of_dim): the price of one step under a layout (see the top). Throws
  /// meshpp::error for a mesh check_mesh refuses, if axis_of_dim does not have one entry per
  /// dim, names no mesh dim, or puts two dims of one tensor or einsum on one mesh dim.
  candidate estimate(const std::vector<mesh_axis>& mesh,
                     const std::vector<int>& axis_of_dim) const {
    check_layout("estimate", mesh, axis_of_dim);
    if (const auto [d, e] = conflict(axis_of_dim, model_.dims.size()); d >= 0) {
      const auto& name = [&](int i) -> const std::string& {
        return model_.dims[static_cast<std::size_t>(i)];
      };
      throw error("meshpp::layout_enumeration::estimate: dims " + name(d) + " and " + name(e) +
                  " of one tensor (or einsum) are both split over mesh dim " +
                  mesh[static_cast<std::size_t>(axis_of_dim[static_cast<std::size_t>(d)])].name);
    }
    return price(mesh, axis_of_dim);
  }

  /// enumerate(mesh): every legal layout of the model's dims over `mesh` (no tensor with two
  /// dims on one mesh dim; no dim split over a mesh dim larger than itself; mesh dims of size 1
  /// split nothing), priced and ranked: those that fit first, each group fastest first. Ties
  /// keep the layout that splits fewer dims first. Of layouts that differ only by swapping two
  /// mesh dims of the same size (which cost the same), only the first is listed.
  std::vector<candidate> enumerate(const std::vector<mesh_axis>& mesh) const {
    check_mesh("enumerate", mesh);
    std::vector<candidate> out;
    std::vector<int> axis(model_.dims.size(), -1);
    walk(mesh, axis, 0, out);
    rank(out);
    return out;
  }

  /// code(mesh, c): the candidate as a mesh type to paste,
  /// "mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>>>"
  std::string code(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("code", mesh, c.axis_of_dim);
    const auto& dims = model_.dims;
    std::string out = "mp::mesh<mp::axes<";
    for (std::size_t i = 0; i < mesh.size(); ++i) out += (i ? ", " : "") + mesh[i].name;
    out += ">, mp::layout<";
    bool first = true;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (c.axis_of_dim[d] < 0) continue;
      out += std::string(first ? "" : ", ") + "mp::split<" + dims[d] + ", " +
             mesh[static_cast<std::size_t>(c.axis_of_dim[d])].name + ">";
      first = false;
    }
    return out + ">>";
  }

  // splits_text(mesh, c): "batch:rows d_ff:cols", or "(nothing split)"
  std::string splits_text(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("splits_text", mesh, c.axis_of_dim);
    const auto& dims = model_.dims;
    std::string out;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (c.axis_of_dim[d] < 0) continue;
      out += (out.empty() ? "" : " ") + dims[d] + ":" +
             mesh[static_cast<std::size_t>(c.axis_of_dim[d])].name;
    }
    return out.empty() ? "(nothing split)" : out;
  }

  /// table(mesh, ranked, top): the first `top` candidates with every term of their price, the
  /// estimated allreduce calls and values, and the winner as code to paste.
  std::string table(const std::vector<mesh_axis>& mesh, const std::vector<candidate>& ranked,
                    std::size_t top = 10) const {
    std::string out = detail::enumeration::table_heading();
    for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i) {
      const auto& c = ranked[i];
      out += detail::enumeration::table_figures(i + 1, c.cost, c.flops, c.collectives.allreduce) +
             splits_text(mesh, c) + (c.fits ? "" : " (does not fit)") + "\n";
    }
    if (!ranked.empty() && ranked.front().fits)
      out += "winner: " + code(mesh, ranked.front()) + "\n";
    return out;
  }

  /// gemms(mesh, c): the gemm calls the candidate's products make on rank 0, summed per shape,
  /// in shape order (as plan::gemms gives a plan's)
  std::vector<gemm_count> gemms(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("gemms", mesh, c.axis_of_dim);
    using detail::enumeration::kind;
    const std::vector<int> sizes = sizes_of(mesh);
    const auto sh = detail::enumeration::shares(model_, sizes, c.axis_of_dim);
    std::vector<gemm_count> out;
    for (const auto& r : model_.rows) {
      if (r.k != kind::einsum && r.k != kind::attention) continue;
      for (const auto& g : detail::enumeration::local_gemms(model_, r, c.axis_of_dim, sizes, sh))
        add_gemms(out, g.shape, g.calls);
    }
    sort_by_shape(out);
    return out;
  }

  /// time_gemm_shapes(mesh, ranked, top, min_seconds): measures on this process the rate of
  /// every gemm shape the first `top` candidates make that the machine has no rate for (as
  /// time_gemms does for a plan), prices every candidate again and ranks the list again, until
  /// the first `top` make no shape left untimed (a candidate priced at the machine's one sgemm
  /// rate may climb into the top on that rate alone: it is then timed too). Returns the number
  /// of shapes timed.
  std::size_t time_gemm_shapes(const std::vector<mesh_axis>& mesh, std::vector<candidate>& ranked,
                               std::size_t top = 10, double min_seconds = 2e-3) {
    check_mesh("time_gemm_shapes", mesh);
    std::size_t timed = 0;
    for (;;) {
      std::vector<gemm_shape> shapes;
      for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i)
        for (const auto& g : gemms(mesh, ranked[i])) shapes.push_back(g.shape);
      const std::size_t now = detail::time_gemm_list(machine_, std::move(shapes), min_seconds);
      if (now == 0) return timed;
      timed += now;
      for (auto& c : ranked) c = price(mesh, c.axis_of_dim);
      rank(ranked);
    }
  }

 private:
  // check_mesh(what, mesh): 1 to 8 mesh dims (as meshpp's meshes), each of size >= 1 and named
  // uniquely, no name a model dim's (the code to paste would not compile), at most INT_MAX
  // ranks; else meshpp::error naming the offending mesh dim
  void check_mesh(const char* what, const std::vector<mesh_axis>& mesh) const {
    const std::string where = std::string("meshpp::layout_enumeration::") + what + ": ";
    if (mesh.empty() || mesh.size() > 8) {
      throw error(where + "a mesh has 1 to 8 dims; got " + std::to_string(mesh.size()));
    }
    double ranks = 1;
    for (std::size_t a = 0; a < mesh.size(); ++a) {
      const auto& m = mesh[a];
      if (m.name.empty()) throw error(where + "mesh dim " + std::to_string(a) + " has no name");
      if (m.size < 1) {
        throw error(where + "mesh dim " + m.name + " has size " + std::to_string(m.size) +
                    " (a mesh dim has at least 1 rank)");
      }
      for (std::size_t b = 0; b < a; ++b)
        if (mesh[b].name == m.name) throw error(where + "mesh dim " + m.name + " named twice");
      if (std::find(model_.dims.begin(), model_.dims.end(), m.name) != model_.dims.end()) {
        throw error(where + "mesh dim " + m.name + " has the name of a dim of the model");
      }
      ranks *= m.size;
    }
    if (ranks > 2147483647.0) throw error(where + "the mesh has more ranks than an int counts");
  }
  // check_layout(what, mesh, axis_of_dim): check_mesh, then one entry per model dim, each a
  // mesh dim of `mesh` or -1
  void check_layout(const char* what, const std::vector<mesh_axis>& mesh,
                    const std::vector<int>& axis_of_dim) const {
    check_mesh(what, mesh);
    const std::string where = std::string("meshpp::layout_enumeration::") + what + ": ";
    const auto& dims = model_.dims;
    if (axis_of_dim.size() != dims.size()) {
      throw error(where + std::to_string(axis_of_dim.size()) + " mesh dims given for " +
                  std::to_string(dims.size()) + " model dims");
    }
    for (std::size_t d = 0; d < dims.size(); ++d) {
      const int a = axis_of_dim[d];
      if (a < -1 || a >= static_cast<int>(mesh.size())) {
        throw error(where + "dim " + dims[d] + " is on mesh dim " + std::to_string(a) +
                    " of a mesh of " + std::to_string(mesh.size()) + " dims");
      }
    }
  }

  // sizes_of(mesh): each mesh dim's size, as the pricing takes a mesh
  static std::vector<int> sizes_of(const std::vector<mesh_axis>& mesh) {
    std::vector<int> out;
    for (const auto& m : mesh) out.push_back(m.size);
    return out;
  }

  // price(mesh, axis): the candidate of the layout axis, priced (plan/detail/enumerate_price.hpp)
  candidate price(const std::vector<mesh_axis>& mesh, const std::vector<int>& axis) const {
    const auto p =
        detail::enumeration::price(model_, machine_, budget_, bucket_bytes_, sizes_of(mesh), axis);
    candidate c;
    c.axis_of_dim = axis;
    c.cost = p.cost;
    c.collectives.allreduce = p.allreduce;
    c.collectives.allgather = p.allgather;
    c.collectives.alltoall = p.alltoall;
    c.flops = p.flops;
    c.fits = p.fits;
    return c;
  }

  static std::size_t splits(const candidate& c) {
    return static_cast<std::size_t>(
        std::count_if(c.axis_of_dim.begin(), c.axis_of_dim.end(), [](int a) { return a >= 0; }));
  }

  static void rank(std::vector<candidate>& out) {
    std::stable_sort(out.begin(), out.end(), [](const candidate& a, const candidate& b) {
      if (a.fits != b.fits) return a.fits;
      if (a.cost.total() != b.cost.total()) return a.cost.total() < b.cost.total();
      return splits(a) < splits(b);
    });
  }

  // conflict(axis, upto): two dims (up to dim `upto`) of one tensor or einsum on one mesh dim,
  // or {-1, -1} if there are none
  std::pair<int, int> conflict(const std::vector<int>& axis, std::size_t upto) const {
    for (const auto& t : model_.tensors) {
      std::array<int, 8> first{};  // the dim of t on each mesh dim (check_mesh: at most 8)
      unsigned used = 0;
      for (const int d : t) {
        if (static_cast<std::size_t>(d) > upto) continue;
        const int a = axis[static_cast<std::size_t>(d)];
        if (a < 0) continue;
        const auto at = static_cast<std::size_t>(a);
        if (used & (1u << a)) return {first.at(at), d};
        used |= 1u << a;
        first.at(at) = d;
      }
    }
    return {-1, -1};
  }
  bool legal(const std::vector<int>& axis, std::size_t upto) const {
    return conflict(axis, upto).first < 0;
  }

  // canonical(mesh, axis): of the layouts that differ only by swapping mesh dims of one size,
  // the one whose mesh dims are first used in their order (the others cost the same)
  static bool canonical(const std::vector<mesh_axis>& mesh, const std::vector<int>& axis) {
    std::vector<std::size_t> first(mesh.size(), axis.size());
    for (std::size_t d = axis.size(); d-- > 0;)
      if (axis[d] >= 0) first[static_cast<std::size_t>(axis[d])] = d;
    for (std::size_t a = 0; a < mesh.size(); ++a)
      for (std::size_t b = a + 1; b < mesh.size(); ++b)
        if (mesh[a].size == mesh[b].size && first[b] < first[a]) return false;
    return true;
  }

  void walk(const std::vector<mesh_axis>& mesh, std::vector<int>& axis, std::size_t d,
            std::vector<candidate>& out) const {
    if (d == model_.dims.size()) {
      if (canonical(mesh, axis)) out.push_back(price(mesh, axis));
      return;
    }
    for (int a = -1; a < static_cast<int>(mesh.size()); ++a) {
      if (a >= 0) {
        const auto p = static_cast<std::size_t>(mesh[static_cast<std::size_t>(a)].size);
        if (p < 2 || model_.sizes[d] < p) continue;
      }
      axis[d] = a;
      if (legal(axis, d)) walk(mesh, axis, d + 1, out);
    }
    axis[d] = -1;
  }

  machine_model machine_;
  double budget_;
  double bucket_bytes_;
  detail::enumeration::model model_;  // read from the reference (read_model)
};

/// enumeration_report(e, meshes, top, time_shapes): every legal layout over each mesh
/// enumerated and ranked (with time_shapes, the first `top` priced again at the rates of their
/// own gemm shapes, timed on this process), then a table of the first `top` per mesh with its
/// winner, after a line with the candidates counted and the seconds it took.
inline std::string enumeration_report(layout_enumeration& e,
                                      const std::vector<std::vector<mesh_axis>>& meshes,
                                      std::size_t top = 10, bool time_shapes = false) {
  const auto start = std::chrono::steady_clock::now();
  std::size_t count = 0;
  std::string tables;
  for (const auto& mesh : meshes) {
    auto ranked = e.enumerate(mesh);
    if (time_shapes) e.time_gemm_shapes(mesh, ranked, top);
    count += ranked.size();
    std::string name = "[";
    for (std::size_t i = 0; i < mesh.size(); ++i)
      name += (i ? ", " : "") + mesh[i].name + ":" + std::to_string(mesh[i].size);
    tables += "mesh " + name + "]: " + std::to_string(ranked.size()) + " legal layouts\n" +
              e.table(mesh, ranked, top);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return detail::enumeration::report_heading(e.dims().size(), count, seconds, e.unpriced()) +
         tables;
}

}  // namespace meshpp
