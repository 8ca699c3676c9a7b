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
// product's partial sum, so it overcounts those allreduces (tests/mpi/transformer_plan.cpp
// compares the estimate with the exact plans).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
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
    read(reference);
  }

  // dims(): the model's dims, in first-use order; size(d): a dim's global size
  const std::vector<std::string>& dims() const { return dims_; }
  std::size_t size(std::size_t d) const { return sizes_.at(d); }
  const machine_model& machine() const { return machine_; }
  // unpriced(): the reference's rows that communicated but that no rule prices (an explicit
  // relayout, a reshape that merges or splits dims, an einsum with output rules, a shift),
  // "phase name" each: every estimate prices them without communication
  const std::vector<std::string>& unpriced() const { return unpriced_; }

  /// estimate(mesh, axis_of_dim): the price of one step under a layout (see the top). Throws
  /// meshpp::error for a mesh check_mesh refuses, if axis_of_dim does not have one entry per
  /// dim, names no mesh dim, or puts two dims of one tensor or einsum on one mesh dim.
  candidate estimate(const std::vector<mesh_axis>& mesh,
                     const std::vector<int>& axis_of_dim) const {
    check_layout("estimate", mesh, axis_of_dim);
    if (const auto [d, e] = conflict(axis_of_dim, dims_.size()); d >= 0) {
      const auto& name = [&](int i) -> const std::string& {
        return dims_[static_cast<std::size_t>(i)];
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
    std::vector<int> axis(dims_.size(), -1);
    walk(mesh, axis, 0, out);
    rank(out);
    return out;
  }

  /// code(mesh, c): the candidate as a mesh type to paste,
  /// "mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>>>"
  std::string code(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("code", mesh, c.axis_of_dim);
    std::string out = "mp::mesh<mp::axes<";
    for (std::size_t i = 0; i < mesh.size(); ++i) out += (i ? ", " : "") + mesh[i].name;
    out += ">, mp::layout<";
    bool first = true;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (c.axis_of_dim[d] < 0) continue;
      out += std::string(first ? "" : ", ") + "mp::split<" + dims_[d] + ", " +
             mesh[static_cast<std::size_t>(c.axis_of_dim[d])].name + ">";
      first = false;
    }
    return out + ">>";
  }

  // splits_text(mesh, c): "batch:rows d_ff:cols", or "(nothing split)"
  std::string splits_text(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("splits_text", mesh, c.axis_of_dim);
    std::string out;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (c.axis_of_dim[d] < 0) continue;
      out += (out.empty() ? "" : " ") + dims_[d] + ":" +
             mesh[static_cast<std::size_t>(c.axis_of_dim[d])].name;
    }
    return out.empty() ? "(nothing split)" : out;
  }

  /// table(mesh, ranked, top): the first `top` candidates with every term of their price, the
  /// estimated allreduce calls and values, and the winner as code to paste.
  std::string table(const std::vector<mesh_axis>& mesh, const std::vector<candidate>& ranked,
                    std::size_t top = 10) const {
    std::string out;
    char line[256];  // the figures; the splits are appended, of any length
    std::snprintf(line, sizeof line, "%-4s %10s %10s %10s %10s %8s %10s %10s %10s  ", "rank",
                  "step ms", "compute", "passes", "comm", "GFLOP", "ar calls", "ar values",
                  "MiB made");
    out += std::string(line) + "splits (fits)\n";
    for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i) {
      const auto& c = ranked[i];
      std::snprintf(line, sizeof line,
                    "%-4zu %10.3f %10.3f %10.3f %10.3f %8.3f %10llu %10llu %10.1f  ", i + 1,
                    1e3 * c.cost.total(), 1e3 * c.cost.compute, 1e3 * c.cost.passes,
                    1e3 * c.cost.communication, 1e-9 * static_cast<double>(c.flops),
                    static_cast<unsigned long long>(c.collectives.allreduce.calls),
                    static_cast<unsigned long long>(c.collectives.allreduce.values),
                    static_cast<double>(c.cost.bytes_made) / (1 << 20));
      out += line + splits_text(mesh, c) + (c.fits ? "" : " (does not fit)") + "\n";
    }
    if (!ranked.empty() && ranked.front().fits)
      out += "winner: " + code(mesh, ranked.front()) + "\n";
    return out;
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
      if (std::find(dims_.begin(), dims_.end(), m.name) != dims_.end()) {
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
    if (axis_of_dim.size() != dims_.size()) {
      throw error(where + std::to_string(axis_of_dim.size()) + " mesh dims given for " +
                  std::to_string(dims_.size()) + " model dims");
    }
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      const int a = axis_of_dim[d];
      if (a < -1 || a >= static_cast<int>(mesh.size())) {
        throw error(where + "dim " + dims_[d] + " is on mesh dim " + std::to_string(a) +
                    " of a mesh of " + std::to_string(mesh.size()) + " dims");
      }
    }
  }

  enum class kind { einsum, attention, reduce, take, softmax, reshape, update, other };
  struct tensor_dims {
    std::vector<int> dims;  // indices into dims_
  };
  struct row {
    kind k = kind::other;
    std::string phase;
    std::uint64_t runs = 0;
    std::uint64_t flops = 0;
    double made = 0, streamed = 0;                        // reference bytes
    std::vector<tensor_dims> in;                          // operands, as the name gives them
    tensor_dims out;                                      // result
    int over = -1;                                        // softmax's dim
    std::vector<std::pair<tensor_dims, double>> layouts;  // made tensors, with their elements
    std::size_t value_bytes = 4;
    bool communicated = false;  // it made a collective in the reference (over one rank)
    std::string text;           // "phase name"
    bool gradient = false;      // a backward einsum making a parameter's gradient
    bool sharded = false;       // an update the replicas share (allgather)
    // an einsum's gemm calls, with its dims by role: m (A and C), n (B and C), k (A and B),
    // batch (all three); swapped: the call computes C^T (its m is the n dims)
    struct gemm_role {
      gemm_count count;
      bool swapped = false;
    };
    std::vector<gemm_role> gemms;
    std::vector<int> m_dims, n_dims, k_dims, batch_dims;
    std::vector<int> all;     // an einsum's dims: A's, then B's not in A
    std::vector<int> summed;  // the dims it sums over (reduce, take, einsum): their split reduces
  };

  static std::size_t splits(const candidate& c) {
    return static_cast<std::size_t>(
        std::count_if(c.axis_of_dim.begin(), c.axis_of_dim.end(), [](int a) { return a >= 0; }));
  }

  int dim_index(const std::string& name) {
    for (std::size_t i = 0; i < dims_.size(); ++i)
      if (dims_[i] == name) return static_cast<int>(i);
    dims_.push_back(name);
    sizes_.push_back(0);
    return static_cast<int>(dims_.size() - 1);
  }
  // check_descriptor(o): o's kind has the dim lists it takes (a row-wise kind, its `over` among
  // its operand's dims), else an error naming the operation: a user's descriptor is read as it
  // says, and one that says too little would be priced wrong without a word
  static void check_descriptor(const operation_count& o) {
    using op = operation_kind;
    const bool rows = o.kind == op::softmax || o.kind == op::logsumexp || o.kind == op::layer_norm;
    const std::size_t takes = o.kind == op::einsum || o.kind == op::take      ? 3
                              : o.kind == op::attention                       ? 4
                              : o.kind == op::reduce || o.kind == op::reshape ? 2
                              : rows                                          ? 1
                                                                              : 0;
    if (takes != 0 && o.dims.size() != takes) {
      throw error("meshpp::layout_enumeration: operation '" + o.name + "' (" + o.phase +
                  ") gives " + std::to_string(o.dims.size()) + " lists of dims; its kind takes " +
                  std::to_string(takes) +
                  " (operation_descriptor::dims: its operands', then its result's)");
    }
    if (rows && std::find(o.dims[0].begin(), o.dims[0].end(), o.over) == o.dims[0].end()) {
      throw error("meshpp::layout_enumeration: operation '" + o.name + "' (" + o.phase +
                  ") runs along '" + o.over + "', which is not a dim of its operand");
    }
  }
  // dims_of(names): a tensor's dims by their names, each numbered as the model's dims are
  tensor_dims dims_of(const std::vector<std::string>& names) {
    tensor_dims t;
    for (const auto& name : names) t.dims.push_back(dim_index(name));
    return t;
  }
  // bytes_of(type): the bytes of a value of the type a tensor_layout names (value_type_name:
  // float, double, int, long, else the compiler's typeid name, Itanium-mangled here)
  static std::size_t bytes_of(const std::string& type) {
    static const std::map<std::string, std::size_t> sizes{{"float", sizeof(float)},
                                                          {"double", sizeof(double)},
                                                          {"int", sizeof(int)},
                                                          {"long", sizeof(long)},
                                                          {"a", 1},
                                                          {"b", sizeof(bool)},
                                                          {"c", 1},
                                                          {"h", 1},
                                                          {"s", 2},
                                                          {"t", 2},
                                                          {"i", 4},
                                                          {"j", 4},
                                                          {"l", sizeof(long)},
                                                          {"m", sizeof(long)},
                                                          {"x", 8},
                                                          {"y", 8},
                                                          {"e", sizeof(long double)}};
    const auto it = sizes.find(type);
    if (it == sizes.end()) {
      throw error("meshpp::layout_enumeration: the reference plan has a tensor of type " + type +
                  ", whose size it does not know");
    }
    return it->second;
  }

  // roles(r, gemms): each dim of einsum r by its role in the gemm calls; a call whose shape
  // is neither m x n nor n x m of the roles' sizes is left out (its flops priced at the rate)
  void roles(row& r, const std::vector<gemm_count>& gemms) {
    auto in = [](const tensor_dims& t, int d) {
      return std::find(t.dims.begin(), t.dims.end(), d) != t.dims.end();
    };
    r.all = r.in[0].dims;
    for (const int d : r.in[1].dims)
      if (!in(r.in[0], d)) r.all.push_back(d);
    for (const int d : r.all) {
      const bool a = in(r.in[0], d), b = in(r.in[1], d), c = in(r.out, d);
      (a && b && c ? r.batch_dims
       : a && b    ? r.k_dims
       : a && c    ? r.m_dims
       : b && c    ? r.n_dims
                   : r.k_dims)
          .push_back(d);
    }
    r.summed = r.k_dims;  // contracted, and summed out of one operand
    pending_gemms_.emplace_back(rows_.size(), gemms);
  }
  // minus(a, b): the dims of a not in b
  static std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> out;
    for (const int d : a)
      if (std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
    return out;
  }
  std::size_t product(const std::vector<int>& ds) const {
    std::size_t p = 1;
    for (const int d : ds) p *= sizes_[static_cast<std::size_t>(d)];
    return p;
  }

  void read(const plan& reference) {
    std::vector<std::vector<int>> parameter_dims;
    for (const auto& o : reference.operations()) {
      row r;
      r.phase = o.phase;
      r.runs = o.runs;
      r.flops = o.flops;
      r.made = static_cast<double>(o.bytes_made);
      r.streamed = static_cast<double>(o.bytes_streamed);
      // what each kind of operation recorded of itself (operation_descriptor, core/counters.hpp):
      // its operands' and result's dims, the dim it runs along
      const std::string& n = o.name;
      auto lists = [&](std::size_t count) {
        if (o.dims.size() != count) return false;
        std::vector<tensor_dims> ts;
        for (const auto& names : o.dims) ts.push_back(dims_of(names));
        r.in.assign(ts.begin(), ts.end() - 1);
        r.out = ts.back();
        return true;
      };
      using op = operation_kind;
      check_descriptor(o);
      if (o.kind == op::einsum && lists(3)) {
        r.k = kind::einsum;
        roles(r, o.gemms);
      } else if (o.kind == op::attention && lists(4)) {
        // the fused core of attention (nn/fused_attention.hpp): q x k x v -> o, all its dims
        // the three operands'; one gemm of each recorded shape per tile, a head of a sequence:
        // its batch dims are X and heads
        r.k = kind::attention;
        const attention_roles a(r);
        r.all = a.with({a.length, a.heads, a.key, a.memory, a.value}).dims;
        r.batch_dims = a.with({a.heads}).dims;
        for (const auto& g : o.gemms) r.gemms.push_back({g, false});
      } else if (o.kind == op::reduce && lists(2)) {
        r.k = kind::reduce;
        r.summed = minus(r.in[0].dims, r.out.dims);
      } else if (o.kind == op::take && lists(3)) {
        r.k = kind::take;
        r.summed = minus(r.in[0].dims, r.out.dims);
        for (const int d : r.in[1].dims) data_dims_.insert(d);
      } else if ((o.kind == op::softmax || o.kind == op::logsumexp || o.kind == op::layer_norm) &&
                 lists(1)) {
        // layer_norm priced as a softmax over its dim; logsumexp's reductions are reduce rows
        // of their own
        r.k = o.kind == op::logsumexp ? kind::other : kind::softmax;
        r.over = dim_index(o.over);
        r.in = {r.out};
      } else if (o.kind == op::reshape && lists(2)) {
        r.k = kind::reshape;
      } else if (o.kind == op::update) {
        r.k = kind::update;
        r.sharded = o.sharded;
      }
      for (const auto& l : o.layouts) {
        tensor_dims t;
        double elements = 1;
        for (std::size_t d = 0; d < l.dims.size(); ++d) {
          const int i = dim_index(l.dims[d]);
          auto& size = sizes_[static_cast<std::size_t>(i)];
          if (l.sizes[d] == 0) {
            throw error("meshpp::layout_enumeration: dim " + l.dims[d] + " has size 0 in " +
                        o.phase + " " + n);
          }
          if (size != 0 && size != l.sizes[d]) {
            throw error("meshpp::layout_enumeration: dim " + l.dims[d] + " has sizes " +
                        std::to_string(size) + " and " + std::to_string(l.sizes[d]) +
                        " in the reference plan (" + o.phase + " " + n + "): one name, one size");
          }
          size = l.sizes[d];
          t.dims.push_back(i);
          elements *= static_cast<double>(l.sizes[d]);
        }
        r.layouts.emplace_back(t, elements);
        r.value_bytes = bytes_of(l.type);
      }
      if (r.k == kind::update) {
        // the update records its variable's layout first (optimizer::step)
        if (o.layouts.empty()) {
          throw error("meshpp::layout_enumeration: the reference plan's row " + n +
                      " records no variable: a plan made by a meshpp older than its optimizer's "
                      "layout record, or counters filled by hand");
        }
        parameter_dims.push_back(r.layouts.front().first.dims);
      }
      r.communicated = !o.collectives.empty();
      r.text = o.phase + " " + n;
      rows_.push_back(std::move(r));
    }
    if (rows_.empty()) {
      throw error(
          "meshpp::layout_enumeration: the reference plan has no operations (was the "
          "step traced with counting by operation?)");
    }
    // a softmax planned over a dim split in the reference (over a mesh dim of size 1) ran as
    // reductions, whose rows the reduce rule prices: then the softmax's own rule would count
    // them twice
    for (auto& r : rows_) {
      if (r.k != kind::softmax) continue;
      tensor_dims rows_of;
      for (const int d : r.out.dims)
        if (d != r.over) rows_of.dims.push_back(d);
      const bool reduced = std::any_of(rows_.begin(), rows_.end(), [&](const row& o) {
        return o.k == kind::reduce && o.phase == r.phase && o.in[0].dims == r.out.dims &&
               o.out.dims == rows_of.dims;
      });
      if (reduced) r.k = kind::other;
    }
    for (const auto& [i, gemms] : pending_gemms_) {  // the sizes are known now
      auto& r = rows_[i];
      const std::size_t m = product(r.m_dims), n = product(r.n_dims), k = product(r.k_dims);
      // C^T when the result begins with a dim of B (einsum.hpp: out_is_ct); the shape decides
      // where it can, this where m and n have one size
      const bool ct = !r.out.dims.empty() && std::find(r.n_dims.begin(), r.n_dims.end(),
                                                       r.out.dims.front()) != r.n_dims.end();
      for (const auto& g : gemms) {
        if (g.shape.k != k) continue;
        const bool straight = g.shape.m == m && g.shape.n == n;
        const bool swapped = g.shape.m == n && g.shape.n == m;
        if (straight || swapped) r.gemms.push_back({g, swapped && (ct || !straight)});
      }
      std::uint64_t flops = 0;
      for (const auto& g : r.gemms)
        flops += 2 * g.count.shape.m * g.count.shape.n * g.count.shape.k * g.count.calls;
      if (flops != r.flops) r.gemms.clear();  // not all of its calls: priced by flops
    }
    // each parameter's gradient: made by a backward einsum whose result has its dims, or else
    // summed over the data dims it lacks
    for (auto& r : rows_) {
      if (r.k != kind::einsum || r.phase != "backward") continue;
      for (const auto& p : parameter_dims)
        if (p == r.out.dims) r.gradient = true;
    }
    const std::vector<int> data(data_dims_.begin(), data_dims_.end());
    for (const auto& r : rows_) {
      if (r.k != kind::update) continue;
      const auto& p = r.layouts.front().first.dims;
      const bool by_einsum = std::any_of(
          rows_.begin(), rows_.end(), [&](const row& e) { return e.gradient && e.out.dims == p; });
      if (!by_einsum) other_gradients_.push_back({p, minus(data, p), r.value_bytes});
    }
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (sizes_[d] == 0) {
        throw error("meshpp::layout_enumeration: the reference plan names dim " + dims_[d] +
                    " but no tensor it made has it, so its size is unknown");
      }
    }
    // a reshape is priced as renames: dims in the same places, each renamed one of one size
    for (auto& r : rows_) {
      if (r.k != kind::reshape) continue;
      bool renames = r.in[0].dims.size() == r.out.dims.size();
      for (std::size_t i = 0; renames && i < r.out.dims.size(); ++i) {
        renames = sizes_[static_cast<std::size_t>(r.in[0].dims[i])] ==
                  sizes_[static_cast<std::size_t>(r.out.dims[i])];
      }
      if (!renames) r.k = kind::other;
    }
    // a row no rule prices that communicated (each collective is counted in the reference, over
    // groups of one rank): priced without communication, and named by unpriced()
    // (the gradient buckets and deferred partial sums are priced where their sums are made)
    for (const auto& r : rows_) {
      const auto named = [&](std::string_view name) {
        return r.text.find(name) == r.phase.size() + 1;
      };
      if (r.k == kind::other && r.communicated && !named("gradient buckets") &&
          !named("deferred partial sums"))
        unpriced_.push_back(r.text);
    }
    // the tensors whose dims must lie on distinct mesh dims
    std::set<std::vector<int>> seen;
    for (const auto& r : rows_) {
      auto add = [&](const tensor_dims& t) {
        if (t.dims.size() > 1 && seen.insert(t.dims).second) tensors_.push_back(t.dims);
      };
      for (const auto& t : r.in) add(t);
      add(r.out);
      for (const auto& l : r.layouts) add(l.first);
      if (r.k == kind::einsum) add(tensor_dims{r.all});  // the computation's dims (einsum.hpp)
    }
  }

  // the share of a dim's global size on rank 0 (the first block, the longest)
  static double share(std::size_t size, int axis, const std::vector<mesh_axis>& mesh) {
    if (axis < 0) return 1;
    const auto p = static_cast<std::size_t>(mesh[static_cast<std::size_t>(axis)].size);
    return static_cast<double>((size + p - 1) / p) / static_cast<double>(size);
  }

  candidate price(const std::vector<mesh_axis>& mesh, const std::vector<int>& axis) const {
    candidate c;
    c.axis_of_dim = axis;
    std::vector<double> sh(dims_.size());
    for (std::size_t d = 0; d < dims_.size(); ++d) sh[d] = share(sizes_[d], axis[d], mesh);
    auto local = [&](const tensor_dims& t) {
      double v = 1;
      for (const int d : t.dims)
        v *= static_cast<double>(sizes_[static_cast<std::size_t>(d)]) *
             sh[static_cast<std::size_t>(d)];
      return v;
    };
    auto fraction = [&](const tensor_dims& t) {
      double f = 1;
      for (const int d : t.dims) f *= sh[static_cast<std::size_t>(d)];
      return f;
    };
    auto group = [&](unsigned mask) {
      int p = 1;
      for (std::size_t a = 0; a < mesh.size(); ++a)
        if (mask & (1u << a)) p *= mesh[a].size;
      return p;
    };
    auto mask_of = [&](const std::vector<int>& ds) {
      unsigned m = 0;
      for (const int d : ds) {
        const int a = axis[static_cast<std::size_t>(d)];
        if (a >= 0) m |= 1u << a;
      }
      return m;
    };
    // collect(kind, mask, values, calls, value_bytes, others): `calls` collectives over the
    // mesh dims in mask, each of `values` values on this rank (an allgather: receiving
    // `others` from the rest of its group), counted as the counters count them (a group of
    // one rank counts nothing; bytes sent per call: allreduce 2 (p - 1) / p of its bytes,
    // allgather the others' bytes, alltoall (p - 1) / p)
    auto collect = [&](collective kind, unsigned mask, double values, double calls,
                       std::size_t value_bytes, double others = 0) {
      if (mask == 0 || calls == 0) return;
      const auto p = static_cast<std::uint64_t>(group(mask));
      if (p == 1) return;
      const auto v = static_cast<std::uint64_t>(std::llround(values));
      const std::uint64_t b = v * value_bytes;
      const std::uint64_t per_call =
          kind == collective::allreduce ? 2 * (p - 1) * b / p
          : kind == collective::allgather
              ? static_cast<std::uint64_t>(std::llround(others)) * value_bytes
              : (p - 1) * b / p;
      c.cost.communication +=
          calls * machine_.seconds(kind, static_cast<int>(p), static_cast<double>(per_call));
      auto& k = c.collectives.of(kind);
      const auto n = static_cast<std::uint64_t>(std::llround(calls));
      k.calls += n;
      k.values += v * n;
      k.bytes_sent += per_call * n;
    };
    std::map<std::pair<unsigned, std::size_t>, double> buckets;  // (mask, value bytes) -> values
    const auto runs_of = [](const row& r) { return static_cast<double>(r.runs); };
    for (const auto& r : rows_) {
      // passes: the bytes made and streamed scale with the share of the tensors made
      double f = 1;
      if (!r.layouts.empty()) {
        double whole = 0, part = 0;
        for (const auto& [t, elements] : r.layouts) {
          whole += elements;
          part += elements * fraction(t);
        }
        f = whole > 0 ? part / whole : 1;
      }
      double made = r.made * f, streamed = r.streamed * f;
      switch (r.k) {
        case kind::einsum: {
          const double flops = static_cast<double>(r.flops) * fraction(tensor_dims{r.all});
          c.flops += static_cast<std::uint64_t>(std::llround(flops));
          if (r.gemms.empty()) {
            c.cost.compute += machine_.gemm_seconds(flops);
          } else {
            for (const auto& g : local_gemms(r, axis, mesh, sh))
              c.cost.compute += machine_.gemm_seconds(g.shape, static_cast<double>(g.calls));
          }
          made = r.made * fraction(r.out);
          streamed = r.streamed * (fraction(r.in[0]) + fraction(r.in[1]) + fraction(r.out)) / 3;
          const unsigned mask = mask_of(r.summed);
          if (mask == 0) break;
          if (r.gradient) {
            buckets[{mask, r.value_bytes}] += local(r.out) * runs_of(r);
          } else {
            collect(collective::allreduce, mask, local(r.out), runs_of(r), r.value_bytes);
          }
          break;
        }
        case kind::attention: {
          if (!attention_split(r, axis)) {  // fused: its tiles' gemms, no communication
            for (const auto& g : local_gemms(r, axis, mesh, sh)) {
              c.flops += 2 * g.shape.m * g.shape.n * g.shape.k * g.calls;
              c.cost.compute += machine_.gemm_seconds(g.shape, static_cast<double>(g.calls));
            }
            break;
          }
          // split: the layer runs scores, softmax and weighted sum as separate operations,
          // priced as they would be: the products at the flop rate on the local blocks (about:
          // each scaled by the share of all the tile's dims), and the allreduces their split
          // contracted dims and the softmax's split rows imply
          const double flops = static_cast<double>(r.flops) * fraction(tensor_dims{r.all});
          c.flops += static_cast<std::uint64_t>(std::llround(flops));
          c.cost.compute += machine_.gemm_seconds(flops);
          const attention_roles a(r);
          const double scores = local(a.with({a.heads, a.length, a.memory}));
          const double rows = local(a.with({a.heads, a.length}));
          const auto sum = [&](int over, double values, double calls) {
            collect(collective::allreduce, mask_of({over}), values, calls, r.value_bytes);
          };
          if (r.phase == "forward") {
            sum(a.key, scores, runs_of(r));           // the scores, over key
            sum(a.memory, rows, 2 * runs_of(r));      // softmax's maxima and sums
            sum(a.memory, local(r.out), runs_of(r));  // the output, over memory
          } else {
            sum(a.length, local(r.in[2]), runs_of(r));  // v's gradient, over length
            sum(a.value, scores, runs_of(r));           // p's, over value
            sum(a.memory, rows, runs_of(r));            // softmax's backward sums
            sum(a.memory, local(r.in[0]), runs_of(r));  // q's, over memory
            sum(a.length, local(r.in[1]), runs_of(r));  // k's, over length
          }
          break;
        }
        case kind::reduce:
          streamed = r.streamed * fraction(r.in[0]);
          collect(collective::allreduce, mask_of(r.summed), local(r.out), runs_of(r),
                  r.value_bytes);
          break;
        case kind::take:
          collect(collective::allreduce, mask_of(r.summed), local(r.out), runs_of(r),
                  r.value_bytes);
          break;
        case kind::softmax: {
          const unsigned mask = mask_of({r.over});
          const double rows =
              local(r.out) / (static_cast<double>(sizes_[static_cast<std::size_t>(r.over)]) *
                              sh[static_cast<std::size_t>(r.over)]);
          collect(collective::allreduce, mask, rows, 2 * runs_of(r), r.value_bytes);
          break;
        }
        case kind::reshape: {
          // a dim renamed (same position) whose mesh dim changes: gathered over its old one
          unsigned gather = 0;
          double whole = local(r.in[0]);  // the gathered slice
          if (r.in[0].dims.size() == r.out.dims.size()) {
            for (std::size_t i = 0; i < r.out.dims.size(); ++i) {
              const auto d = static_cast<std::size_t>(r.in[0].dims[i]);
              const int from = axis[d];
              if (from < 0 || from == axis[static_cast<std::size_t>(r.out.dims[i])]) continue;
              gather |= 1u << from;
              whole /= sh[d];
            }
          }
          collect(collective::allgather, gather, local(r.in[0]), runs_of(r), r.value_bytes,
                  whole - local(r.in[0]));
          break;
        }
        case kind::update: {
          // a sharded update of a variable replicated over mesh dims: the replicas share
          // it and allgather their shares (optimizer_slot::apply); rank 0 holds share 0
          // (its passes, over rank 0's share only)
          if (!r.sharded) break;
          const auto& p = r.layouts.front().first;
          unsigned mask = (1u << mesh.size()) - 1;
          mask &= ~mask_of(p.dims);
          const auto n = static_cast<std::size_t>(std::llround(local(p)));
          const auto replicas = static_cast<std::size_t>(group(mask));
          const std::size_t own = detail::shard_counts(n, replicas).front();
          if (n > 0) streamed *= static_cast<double>(own) / static_cast<double>(n);
          collect(collective::allgather, mask, static_cast<double>(own), runs_of(r), r.value_bytes,
                  static_cast<double>(n - own));
          break;
        }
        default:
          break;
      }
      c.cost.passes += machine_.stream_seconds(made + streamed);
      c.cost.bytes_made += static_cast<std::uint64_t>(std::llround(made));
    }
    for (const auto& g : other_gradients_) {
      const unsigned mask = mask_of(g.summed);
      if (mask != 0) buckets[{mask, g.value_bytes}] += local(tensor_dims{g.dims});
    }
    for (const auto& [key, values] : buckets) {  // calls of equal parts (the buckets' are near)
      const auto [mask, value_bytes] = key;
      const double bytes = values * static_cast<double>(value_bytes);
      const double calls = std::max(1.0, std::ceil(bytes / std::max(bucket_bytes_, 1.0)));
      collect(collective::allreduce, mask, values / calls, calls, value_bytes);
    }
    c.fits = budget_ <= 0 || static_cast<double>(c.cost.bytes_made) <= budget_;
    return c;
  }

  // attention_roles(r): the dims of an attention row by role, from its operands q [X, length,
  // heads, key], k [X, memory, heads, key] and v [X, memory, heads, value]
  struct attention_roles {
    std::vector<int> x;
    int length, heads, key, memory, value;
    explicit attention_roles(const row& r)
        : x(r.in[0].dims.begin(), r.in[0].dims.end() - 3),
          length(r.in[0].dims.end()[-3]),
          heads(r.in[0].dims.end()[-2]),
          key(r.in[0].dims.back()),
          memory(r.in[1].dims.end()[-3]),
          value(r.in[2].dims.back()) {}
    // with(dims): X then dims
    tensor_dims with(std::initializer_list<int> dims) const {
      tensor_dims t{x};
      t.dims.insert(t.dims.end(), dims);
      return t;
    }
  };
  // attention_split(r, axis): the layout splits a dim of attention row r's tiles, so the layer
  // runs the separate operations instead of the fused one
  static bool attention_split(const row& r, const std::vector<int>& axis) {
    const attention_roles a(r);
    for (const int d : {a.length, a.memory, a.key, a.value})
      if (axis[static_cast<std::size_t>(d)] >= 0) return true;
    return false;
  }

  // local_gemms(r, axis, mesh, sh): einsum r's gemm calls on rank 0 under a layout (sh: each
  // dim's share). A forward product with no batch dims whose contracted dims are split runs as
  // a ring fused with its allreduce when the rows it stripes divide among the group (einsum.hpp:
  // allreduce_ring): p calls, each on 1/p of the first dim of the gemm.
  std::vector<gemm_count> local_gemms(const row& r, const std::vector<int>& axis,
                                      const std::vector<mesh_axis>& mesh,
                                      const std::vector<double>& sh) const {
    auto local = [&](const std::vector<int>& ds) {
      double v = 1;
      for (const int d : ds)
        v *= static_cast<double>(sizes_[static_cast<std::size_t>(d)]) *
             sh[static_cast<std::size_t>(d)];
      return static_cast<std::size_t>(std::llround(v));
    };
    const std::size_t m = local(r.m_dims), n = local(r.n_dims), k = local(r.k_dims);
    const double batch_share = static_cast<double>(local(r.batch_dims)) /
                               static_cast<double>(std::max<std::size_t>(1, product(r.batch_dims)));
    std::size_t ring = 1;
    if (r.phase == "forward" && r.batch_dims.empty()) {
      for (const int d : r.k_dims) {
        const int a = axis[static_cast<std::size_t>(d)];
        if (a >= 0) ring *= static_cast<std::size_t>(mesh[static_cast<std::size_t>(a)].size);
      }
    }
    std::vector<gemm_count> out;
    if (r.k == kind::attention && attention_split(r, axis)) return out;  // priced by its flops
    for (const auto& g : r.gemms) {
      gemm_count l = g.count;
      if (r.k == kind::attention) {  // the same tiles, fewer of them
        l.calls = static_cast<std::uint64_t>(
            std::llround(static_cast<double>(g.count.calls) * batch_share));
        out.push_back(l);
        continue;
      }
      l.shape.m = g.swapped ? n : m;
      l.shape.n = g.swapped ? m : n;
      l.shape.k = k;
      l.calls = static_cast<std::uint64_t>(
          std::llround(static_cast<double>(g.count.calls) * batch_share));
      if (ring > 1 && l.shape.m % ring == 0) {
        l.shape.m /= ring;
        l.calls *= ring;
      }
      out.push_back(l);
    }
    return out;
  }

 public:
  /// gemms(mesh, c): the gemm calls the candidate's products make on rank 0, summed per shape,
  /// in shape order (as plan::gemms gives a plan's)
  std::vector<gemm_count> gemms(const std::vector<mesh_axis>& mesh, const candidate& c) const {
    check_layout("gemms", mesh, c.axis_of_dim);
    std::vector<double> sh(dims_.size());
    for (std::size_t d = 0; d < dims_.size(); ++d) sh[d] = share(sizes_[d], c.axis_of_dim[d], mesh);
    std::vector<gemm_count> out;
    for (const auto& r : rows_) {
      if (r.k != kind::einsum && r.k != kind::attention) continue;
      for (const auto& g : local_gemms(r, c.axis_of_dim, mesh, sh))
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
    for (const auto& t : tensors_) {
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
    if (d == dims_.size()) {
      if (canonical(mesh, axis)) out.push_back(price(mesh, axis));
      return;
    }
    for (int a = -1; a < static_cast<int>(mesh.size()); ++a) {
      if (a >= 0) {
        const auto p = static_cast<std::size_t>(mesh[static_cast<std::size_t>(a)].size);
        if (p < 2 || sizes_[d] < p) continue;
      }
      axis[d] = a;
      if (legal(axis, d)) walk(mesh, axis, d + 1, out);
    }
    axis[d] = -1;
  }

  machine_model machine_;
  double budget_;
  double bucket_bytes_;
  std::vector<std::string> dims_;
  std::vector<std::size_t> sizes_;
  std::vector<row> rows_;
  std::set<int> data_dims_;
  struct other_gradient {  // a parameter's gradient no einsum makes: summed over data dims
    std::vector<int> dims, summed;
    std::size_t value_bytes;
  };
  std::vector<other_gradient> other_gradients_;
  std::vector<std::vector<int>> tensors_;
  std::vector<std::string> unpriced_;
  std::vector<std::pair<std::size_t, std::vector<gemm_count>>> pending_gemms_;
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
  char line[256];
  std::snprintf(line, sizeof line,
                "every layout of the model's %zu dims, estimated (plan/enumerate.hpp): %zu "
                "candidates in %.2f s\n",
                e.dims().size(), count, seconds);
  std::string out = line;
  if (!e.unpriced().empty()) {
    out += "priced without communication (no rule for them):";
    for (const auto& u : e.unpriced()) out += "\n  " + u;
    out += "\n";
  }
  return out + tables;
}

}  // namespace meshpp
