// meshpp/plan/detail/enumerate_price.hpp — the price of one step of a model
// (plan/detail/enumerate_model.hpp) under one layout, operation by operation, each kind by its
// own rule: einsum, attention, reduce, take, softmax (and layer_norm) rows, reshape, update,
// and the parameters' gradients packed in buckets. The rules are told at the top of
// plan/enumerate.hpp; the price is the search's (plan/search.hpp).
//
// A mesh is given here by its dims' sizes alone (mesh[a]: the size of mesh dim a), a layout by
// the mesh dim of each model dim (axis[d], or -1: not split).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "meshpp/core/counters.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/plan/detail/enumerate_model.hpp"
#include "meshpp/plan/machine.hpp"
#include "meshpp/plan/search.hpp"  // step_cost

namespace meshpp::detail::enumeration {

// the share of a dim's global size on rank 0 (the first block, the longest)
inline double share(std::size_t size, int axis, const std::vector<int>& mesh) {
  if (axis < 0) return 1;
  const auto p = static_cast<std::size_t>(mesh[static_cast<std::size_t>(axis)]);
  return static_cast<double>((size + p - 1) / p) / static_cast<double>(size);
}
// shares(m, mesh, axis): each dim's share under the layout
inline std::vector<double> shares(const model& m, const std::vector<int>& mesh,
                                  const std::vector<int>& axis) {
  std::vector<double> sh(m.dims.size());
  for (std::size_t d = 0; d < m.dims.size(); ++d) sh[d] = share(m.sizes[d], axis[d], mesh);
  return sh;
}

// attention_split(r, axis): the layout splits a dim of attention row r's tiles, so the layer
// runs the separate operations instead of the fused one
inline bool attention_split(const row& r, const std::vector<int>& axis) {
  const attention_roles a(r);
  for (const int d : {a.length, a.memory, a.key, a.value})
    if (axis[static_cast<std::size_t>(d)] >= 0) return true;
  return false;
}

// local_gemms(mod, r, axis, mesh, sh): einsum r's gemm calls on rank 0 under a layout (mod: the
// model of row r; sh: each dim's share). A forward product with no batch dims whose contracted dims
// are split runs as a ring fused with its allreduce when the rows it stripes divide among the group
// (einsum.hpp: allreduce_ring): p calls, each on 1/p of the first dim of the gemm.
inline std::vector<gemm_count> local_gemms(const model& mod, const row& r,
                                           const std::vector<int>& axis,
                                           const std::vector<int>& mesh,
                                           const std::vector<double>& sh) {
  auto local = [&](const std::vector<int>& ds) {
    double v = 1;
    for (const int d : ds)
      v *= static_cast<double>(mod.sizes[static_cast<std::size_t>(d)]) *
           sh[static_cast<std::size_t>(d)];
    return static_cast<std::size_t>(std::llround(v));
  };
  const std::size_t m = local(r.m_dims), n = local(r.n_dims), k = local(r.k_dims);
  const double batch_share =
      static_cast<double>(local(r.batch_dims)) /
      static_cast<double>(std::max<std::size_t>(1, mod.product(r.batch_dims)));
  std::size_t ring = 1;
  if (r.phase == meshpp::counters::forward_phase && r.batch_dims.empty()) {
    for (const int d : r.k_dims) {
      const int a = axis[static_cast<std::size_t>(d)];
      if (a >= 0) ring *= static_cast<std::size_t>(mesh[static_cast<std::size_t>(a)]);
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
    l.calls =
        static_cast<std::uint64_t>(std::llround(static_cast<double>(g.count.calls) * batch_share));
    if (ring > 1 && l.shape.m % ring == 0) {
      l.shape.m /= ring;
      l.calls *= ring;
    }
    out.push_back(l);
  }
  return out;
}

// layout_price: a layout's price, as layout_enumeration::candidate holds it
struct layout_price {
  step_cost cost;
  meshpp::collective_count allreduce, allgather, alltoall;
  std::uint64_t flops = 0;
  bool fits = true;
  meshpp::collective_count& of(collective c) {
    return c == collective::allgather  ? allgather
           : c == collective::alltoall ? alltoall
                                       : allreduce;
  }
};

// pricing: one layout's price, summed row by row (price() below)
class pricing {
 public:
  pricing(const model& m, const machine_model& machine, const std::vector<int>& mesh,
          const std::vector<int>& axis)
      : m_(m), machine_(machine), mesh_(mesh), axis_(axis), sh_(shares(m, mesh, axis)) {}

  // price(budget, bucket_bytes): every row's price, then the gradient buckets'; fits: the bytes
  // made within budget (0: none)
  layout_price price(double budget, double bucket_bytes) && {
    for (const auto& r : m_.rows) {
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
        case kind::einsum:
          einsum(r, made, streamed);
          break;
        case kind::attention:
          attention(r);
          break;
        case kind::reduce:
          reduce(r, streamed);
          break;
        case kind::take:
          take(r);
          break;
        case kind::softmax:
          softmax(r);
          break;
        case kind::reshape:
          reshape(r);
          break;
        case kind::update:
          update(r, streamed);
          break;
        default:
          break;
      }
      c_.cost.passes += machine_.stream_seconds(made + streamed);
      c_.cost.bytes_made += static_cast<std::uint64_t>(std::llround(made));
    }
    gradients(bucket_bytes);
    c_.fits = budget <= 0 || static_cast<double>(c_.cost.bytes_made) <= budget;
    return c_;
  }

 private:
  // einsum A x B -> C: flops x the local share of every dim (each gemm call at its shape's
  // rate, where all its calls are known); split contracted dims: an allreduce of the local C,
  // or for a parameter's gradient its share of a bucket
  void einsum(const row& r, double& made, double& streamed) {
    const double flops = static_cast<double>(r.flops) * fraction(tensor_dims{r.all});
    c_.flops += static_cast<std::uint64_t>(std::llround(flops));
    if (r.gemms.empty()) {
      c_.cost.compute += machine_.gemm_seconds(flops);
    } else {
      for (const auto& g : local_gemms(m_, r, axis_, mesh_, sh_))
        c_.cost.compute += machine_.gemm_seconds(g.shape, static_cast<double>(g.calls));
    }
    made = r.made * fraction(r.out);
    streamed = r.streamed * (fraction(r.in[0]) + fraction(r.in[1]) + fraction(r.out)) / 3;
    const unsigned mask = mask_of(r.summed);
    if (mask == 0) return;
    if (r.gradient) {
      buckets_[{mask, r.value_bytes}] += local(r.out) * runs_of(r);
    } else {
      collect(collective::allreduce, mask, local(r.out), runs_of(r), r.value_bytes);
    }
  }
  // attention q x k x v -> o: fused, or the separate operations where its tiles are split
  void attention(const row& r) {
    if (!attention_split(r, axis_)) {  // fused: its tiles' gemms, no communication
      for (const auto& g : local_gemms(m_, r, axis_, mesh_, sh_)) {
        c_.flops += 2 * g.shape.m * g.shape.n * g.shape.k * g.calls;
        c_.cost.compute += machine_.gemm_seconds(g.shape, static_cast<double>(g.calls));
      }
      return;
    }
    // split: the layer runs scores, softmax and weighted sum as separate operations,
    // priced as they would be: the products at the flop rate on the local blocks (about:
    // each scaled by the share of all the tile's dims), and the allreduces their split
    // contracted dims and the softmax's split rows imply
    const double flops = static_cast<double>(r.flops) * fraction(tensor_dims{r.all});
    c_.flops += static_cast<std::uint64_t>(std::llround(flops));
    c_.cost.compute += machine_.gemm_seconds(flops);
    const attention_roles a(r);
    const double scores = local(a.with({a.heads, a.length, a.memory}));
    const double rows = local(a.with({a.heads, a.length}));
    const auto sum = [&](int over, double values, double calls) {
      collect(collective::allreduce, mask_of({over}), values, calls, r.value_bytes);
    };
    if (r.phase == meshpp::counters::forward_phase) {
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
  }
  // reduce A -> B: reduced dims split: an allreduce of the local B
  void reduce(const row& r, double& streamed) {
    streamed = r.streamed * fraction(r.in[0]);
    collect(collective::allreduce, mask_of(r.summed), local(r.out), runs_of(r), r.value_bytes);
  }
  // take T at I -> C: T's taken dim split: an allreduce of the local C
  void take(const row& r) {
    collect(collective::allreduce, mask_of(r.summed), local(r.out), runs_of(r), r.value_bytes);
  }
  // softmax (or layer_norm) over d of T: d split: two allreduces of T's rows
  void softmax(const row& r) {
    const unsigned mask = mask_of({r.over});
    const double rows =
        local(r.out) / (static_cast<double>(m_.sizes[static_cast<std::size_t>(r.over)]) *
                        sh_[static_cast<std::size_t>(r.over)]);
    collect(collective::allreduce, mask, rows, 2 * runs_of(r), r.value_bytes);
  }
  // reshape A -> B: a dim renamed (same position) whose mesh dim changes: gathered over its
  // old one
  void reshape(const row& r) {
    unsigned gather = 0;
    double whole = local(r.in[0]);  // the gathered slice
    if (r.in[0].dims.size() == r.out.dims.size()) {
      for (std::size_t i = 0; i < r.out.dims.size(); ++i) {
        const auto d = static_cast<std::size_t>(r.in[0].dims[i]);
        const int from = axis_[d];
        if (from < 0 || from == axis_[static_cast<std::size_t>(r.out.dims[i])]) continue;
        gather |= 1u << from;
        whole /= sh_[d];
      }
    }
    collect(collective::allgather, gather, local(r.in[0]), runs_of(r), r.value_bytes,
            whole - local(r.in[0]));
  }
  // update of p: a sharded update of a variable replicated over mesh dims: the replicas share
  // it and allgather their shares (optimizer_slot::apply); rank 0 holds share 0 (its passes,
  // over rank 0's share only)
  void update(const row& r, double& streamed) {
    if (!r.sharded) return;
    const auto& p = r.layouts.front().first;
    unsigned mask = (1u << mesh_.size()) - 1;
    mask &= ~mask_of(p.dims);
    const auto n = static_cast<std::size_t>(std::llround(local(p)));
    const auto replicas = static_cast<std::size_t>(group(mask));
    const std::size_t own = detail::shard_counts(n, replicas).front();
    if (n > 0) streamed *= static_cast<double>(own) / static_cast<double>(n);
    collect(collective::allgather, mask, static_cast<double>(own), runs_of(r), r.value_bytes,
            static_cast<double>(n - own));
  }
  // gradients(bucket_bytes): the gradients no einsum makes, summed over the data dims, added
  // to the buckets, then each bucket's allreduces, bucket_bytes at most a call
  void gradients(double bucket_bytes) {
    for (const auto& g : m_.other_gradients) {
      const unsigned mask = mask_of(g.summed);
      if (mask != 0) buckets_[{mask, g.value_bytes}] += local(tensor_dims{g.dims});
    }
    for (const auto& [key, values] : buckets_) {  // calls of equal parts (the buckets' are near)
      const auto [mask, value_bytes] = key;
      const double bytes = values * static_cast<double>(value_bytes);
      const double calls = std::max(1.0, std::ceil(bytes / std::max(bucket_bytes, 1.0)));
      collect(collective::allreduce, mask, values / calls, calls, value_bytes);
    }
  }

  // local(t): t's elements on rank 0
  double local(const tensor_dims& t) const {
    double v = 1;
    for (const int d : t.dims)
      v *= static_cast<double>(m_.sizes[static_cast<std::size_t>(d)]) *
           sh_[static_cast<std::size_t>(d)];
    return v;
  }
  // fraction(t): the share of t on rank 0
  double fraction(const tensor_dims& t) const {
    double f = 1;
    for (const int d : t.dims) f *= sh_[static_cast<std::size_t>(d)];
    return f;
  }
  // group(mask): the ranks of a group over the mesh dims in mask
  int group(unsigned mask) const {
    int p = 1;
    for (std::size_t a = 0; a < mesh_.size(); ++a)
      if (mask & (1u << a)) p *= mesh_[a];
    return p;
  }
  // mask_of(ds): the mesh dims splitting the dims ds
  unsigned mask_of(const std::vector<int>& ds) const {
    unsigned m = 0;
    for (const int d : ds) {
      const int a = axis_[static_cast<std::size_t>(d)];
      if (a >= 0) m |= 1u << a;
    }
    return m;
  }
  static double runs_of(const row& r) { return static_cast<double>(r.runs); }
  // collect(kind, mask, values, calls, value_bytes, others): `calls` collectives over the
  // mesh dims in mask, each of `values` values on this rank (an allgather: receiving
  // `others` from the rest of its group), counted as the counters count them (a group of
  // one rank counts nothing; bytes sent per call: allreduce 2 (p - 1) / p of its bytes,
  // allgather the others' bytes, alltoall (p - 1) / p)
  void collect(collective kind, unsigned mask, double values, double calls, std::size_t value_bytes,
               double others = 0) {
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
    c_.cost.communication +=
        calls * machine_.seconds(kind, static_cast<int>(p), static_cast<double>(per_call));
    auto& k = c_.of(kind);
    const auto n = static_cast<std::uint64_t>(std::llround(calls));
    k.calls += n;
    k.values += v * n;
    k.bytes_sent += per_call * n;
  }

  const model& m_;
  const machine_model& machine_;
  const std::vector<int>& mesh_;
  const std::vector<int>& axis_;
  std::vector<double> sh_;
  layout_price c_;
  std::map<std::pair<unsigned, std::size_t>, double> buckets_;  // (mask, value bytes) -> values
};

// price(m, machine, budget, bucket_bytes, mesh, axis): the price of one step of model m under
// the layout axis over a mesh of the sizes `mesh`
inline layout_price price(const model& m, const machine_model& machine, double budget,
                          double bucket_bytes, const std::vector<int>& mesh,
                          const std::vector<int>& axis) {
  return pricing(m, machine, mesh, axis).price(budget, bucket_bytes);
}

}  // namespace meshpp::detail::enumeration
