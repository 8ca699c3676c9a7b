// meshpp/plan/detail/enumerate_model.hpp — the model a layout enumeration prices
// (plan/enumerate.hpp), read from the operations of its reference plan: the model's dims and
// their global sizes, one row per operation (its kind, as its operation_descriptor names it,
// the dims of its operands and result, an einsum's gemm calls by the roles of its dims), the
// parameters' gradients no einsum makes, and the tensors whose dims must lie on distinct mesh
// dims. What each kind of row costs under a layout is plan/detail/enumerate_price.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/plan/plan.hpp"

namespace meshpp::detail::enumeration {

enum class kind { einsum, attention, reduce, take, softmax, reshape, update, other };
struct tensor_dims {
  std::vector<int> dims;  // indices into the model's dims
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
  bool communicated = false;   // it made a collective in the reference (over one rank)
  bool gradient_sums = false;  // operation_kind::gradient_sums: priced with the gradients
  std::string text;            // "phase name"
  bool gradient = false;       // a backward einsum making a parameter's gradient
  bool sharded = false;        // an update the replicas share (allgather)
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

struct other_gradient {  // a parameter's gradient no einsum makes: summed over data dims
  std::vector<int> dims, summed;
  std::size_t value_bytes;
};

// model: what a layout enumeration prices, read from its reference plan (read_model)
struct model {
  std::vector<std::string> dims;   // the model's dims, in first-use order
  std::vector<std::size_t> sizes;  // each dim's global size
  std::vector<row> rows;           // one per operation of the reference
  std::vector<other_gradient> other_gradients;
  std::vector<std::vector<int>> tensors;  // the tensors whose dims must lie on distinct mesh dims
  std::vector<std::string> unpriced;      // "phase name" of the rows no rule prices
  std::size_t product(const std::vector<int>& ds) const {
    std::size_t p = 1;
    for (const int d : ds) p *= sizes[static_cast<std::size_t>(d)];
    return p;
  }
};

// check_descriptor(o): o's kind has the dim lists it takes (a row-wise kind, its `over` among
// its operand's dims), else an error naming the operation: a user's descriptor is read as it
// says, and one that says too little would be priced wrong without a word
inline void check_descriptor(const operation_count& o) {
  using op = operation_kind;
  const bool rows = o.kind == op::softmax || o.kind == op::logsumexp || o.kind == op::layer_norm;
  const std::size_t takes = o.kind == op::einsum || o.kind == op::take      ? 3
                            : o.kind == op::attention                       ? 4
                            : o.kind == op::reduce || o.kind == op::reshape ? 2
                            : rows                                          ? 1
                                                                            : 0;
  if (takes != 0 && o.dims.size() != takes) {
    throw error("meshpp::layout_enumeration: operation '" + o.name + "' (" + o.phase + ") gives " +
                std::to_string(o.dims.size()) + " lists of dims; its kind takes " +
                std::to_string(takes) +
                " (operation_descriptor::dims: its operands', then its result's)");
  }
  if (rows && std::find(o.dims[0].begin(), o.dims[0].end(), o.over) == o.dims[0].end()) {
    throw error("meshpp::layout_enumeration: operation '" + o.name + "' (" + o.phase +
                ") runs along '" + o.over + "', which is not a dim of its operand");
  }
}
// bytes_of(type): the bytes of a value of the type a tensor_layout names (value_type_name:
// float, double, int, long, else the compiler's typeid name, Itanium-mangled here)
inline std::size_t bytes_of(const std::string& type) {
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
// minus(a, b): the dims of a not in b
inline std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (const int d : a)
    if (std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
  return out;
}

// model_reader: the model of one reference plan, read once (read_model)
class model_reader {
 public:
  // read(reference): the model of the reference's operations; throws meshpp::error for a
  // descriptor that gives too few dims, a dim of two sizes or of none, a type of unknown size,
  // an update that records no variable, or a reference with no operations
  model read(const plan& reference) && {
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
          auto& size = model_.sizes[static_cast<std::size_t>(i)];
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
      r.gradient_sums = o.kind == operation_kind::gradient_sums;
      r.text = o.phase + " " + n;
      model_.rows.push_back(std::move(r));
    }
    auto& rows = model_.rows;
    if (rows.empty()) {
      throw error(
          "meshpp::layout_enumeration: the reference plan has no operations (was the "
          "step traced with counting by operation?)");
    }
    // a softmax planned over a dim split in the reference (over a mesh dim of size 1) ran as
    // reductions, whose rows the reduce rule prices: then the softmax's own rule would count
    // them twice
    for (auto& r : rows) {
      if (r.k != kind::softmax) continue;
      tensor_dims rows_of;
      for (const int d : r.out.dims)
        if (d != r.over) rows_of.dims.push_back(d);
      const bool reduced = std::any_of(rows.begin(), rows.end(), [&](const row& o) {
        return o.k == kind::reduce && o.phase == r.phase && o.in[0].dims == r.out.dims &&
               o.out.dims == rows_of.dims;
      });
      if (reduced) r.k = kind::other;
    }
    for (const auto& [i, gemms] : pending_gemms_) {  // the sizes are known now
      auto& r = rows[i];
      const std::size_t m = model_.product(r.m_dims), n = model_.product(r.n_dims),
                        k = model_.product(r.k_dims);
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
    for (auto& r : rows) {
      if (r.k != kind::einsum || r.phase != meshpp::counters::backward_phase) continue;
      for (const auto& p : parameter_dims)
        if (p == r.out.dims) r.gradient = true;
    }
    const std::vector<int> data(data_dims_.begin(), data_dims_.end());
    for (const auto& r : rows) {
      if (r.k != kind::update) continue;
      const auto& p = r.layouts.front().first.dims;
      const bool by_einsum = std::any_of(
          rows.begin(), rows.end(), [&](const row& e) { return e.gradient && e.out.dims == p; });
      if (!by_einsum) model_.other_gradients.push_back({p, minus(data, p), r.value_bytes});
    }
    for (std::size_t d = 0; d < model_.dims.size(); ++d) {
      if (model_.sizes[d] == 0) {
        throw error("meshpp::layout_enumeration: the reference plan names dim " + model_.dims[d] +
                    " but no tensor it made has it, so its size is unknown");
      }
    }
    // a reshape is priced as renames: dims in the same places, each renamed one of one size
    for (auto& r : rows) {
      if (r.k != kind::reshape) continue;
      bool renames = r.in[0].dims.size() == r.out.dims.size();
      for (std::size_t i = 0; renames && i < r.out.dims.size(); ++i) {
        renames = model_.sizes[static_cast<std::size_t>(r.in[0].dims[i])] ==
                  model_.sizes[static_cast<std::size_t>(r.out.dims[i])];
      }
      if (!renames) r.k = kind::other;
    }
    // a row no rule prices that communicated (each collective is counted in the reference, over
    // groups of one rank): priced without communication, and named by unpriced() (sums that
    // complete gradients, operation_kind::gradient_sums, are priced where the gradients are made)
    for (const auto& r : rows) {
      if (r.k == kind::other && r.communicated && !r.gradient_sums)
        model_.unpriced.push_back(r.text);
    }
    // the tensors whose dims must lie on distinct mesh dims
    std::set<std::vector<int>> seen;
    for (const auto& r : rows) {
      auto add = [&](const tensor_dims& t) {
        if (t.dims.size() > 1 && seen.insert(t.dims).second) model_.tensors.push_back(t.dims);
      };
      for (const auto& t : r.in) add(t);
      add(r.out);
      for (const auto& l : r.layouts) add(l.first);
      if (r.k == kind::einsum) add(tensor_dims{r.all});  // the computation's dims (einsum.hpp)
    }
    return std::move(model_);
  }

 private:
  int dim_index(const std::string& name) {
    for (std::size_t i = 0; i < model_.dims.size(); ++i)
      if (model_.dims[i] == name) return static_cast<int>(i);
    model_.dims.push_back(name);
    model_.sizes.push_back(0);
    return static_cast<int>(model_.dims.size() - 1);
  }
  // dims_of(names): a tensor's dims by their names, each numbered as the model's dims are
  tensor_dims dims_of(const std::vector<std::string>& names) {
    tensor_dims t;
    for (const auto& name : names) t.dims.push_back(dim_index(name));
    return t;
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
    pending_gemms_.emplace_back(model_.rows.size(), gemms);
  }

  model model_;
  std::set<int> data_dims_;
  std::vector<std::pair<std::size_t, std::vector<gemm_count>>> pending_gemms_;
};

// read_model(reference): the model of a reference plan (model_reader::read)
inline model read_model(const plan& reference) { return model_reader{}.read(reference); }

}  // namespace meshpp::detail::enumeration
