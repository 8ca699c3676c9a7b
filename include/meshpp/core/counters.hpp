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
// One rule for every collective: a group of one rank moves nothing and counts nothing (no
// call, no values, no bytes; no MPI call is made). By operation, such a call still lists its
// kind and mesh dims in its operation's row, with zero counts, so that a plan made on one rank
// shows where the operation communicates on a larger mesh (plan/enumerate.hpp reads it). An
// allreduce over no mesh dims at all is not a collective and is not listed.
//
// By operation (off by default; always on for a planned mesh, core/mesh.hpp):
//   mesh.counters().by_operation(true);
//   ... mesh.counters().operations()   // the same counts per operation, in first-run order
// Each meshpp operation that communicates, computes or makes a tensor opens a scope with its
// name and dims ("einsum [batch, hidden] x [hidden, classes] -> [batch, classes]"); counts go to
// the innermost scope open, under the phase (forward, backward, optimizer) that is open. An
// operation run again adds to its row: rows are per distinct operation, not per call.
//
// Timed by operation (off by default): mesh.counters().by_operation(true, /*timed*/ true) also
// charges wall time to the rows. Each scope opening or closing charges the time since the last
// one to the row that was current, so a row's `seconds` exclude the operations nested in it,
// and the time between operations (expressions, makers) goes to the unnamed row of its phase.
// Time charged to no row that counted anything (before the first operation of a step, say) is
// `unattributed_seconds()`. Two clock reads per operation; what a measured step is priced
// against (plan/search.hpp, profile_table). Seconds are not part of a row's equality: a plan
// has none.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/core/config.hpp"

namespace meshpp {

namespace detail {
// what an optimizer's operation name ends with when it updated its variable sharded ("update w
// (sharded)", optim/optimizer.hpp); plans and profiles read it back (plan/enumerate.hpp,
// plan/search.hpp)
inline constexpr std::string_view sharded_update_suffix = " (sharded)";
}  // namespace detail

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

inline bool operator==(const collective_count& a, const collective_count& b) {
  return a.calls == b.calls && a.values == b.values && a.bytes_sent == b.bytes_sent;
}

/// @brief A tensor's layout as an operation made it: its value type, dims, global sizes and
/// the mesh dim each dim is split over (an index in mesh order, or -1: whole). What a drawing
/// of the operation needs (plan::pictures, io/draw.hpp).
struct tensor_layout {
  std::string type;
  std::vector<std::string> dims;
  std::vector<std::size_t> sizes;
  std::vector<int> mesh_dim_of_dim;
  friend bool operator==(const tensor_layout&, const tensor_layout&) = default;
};

/// @brief The arguments of one local gemm call (row-major: C[m, n] = op(A)[m, k] op(B)[k, n]),
/// with how often an operation made it. The shapes an operation's products take, so a plan can
/// be priced at the rate of each (plan/search.hpp, time_gemms).
struct gemm_shape {
  std::size_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy reads the synthesized "< 0" as a null pointer
  friend auto operator<=>(const gemm_shape&, const gemm_shape&) = default;
};
struct gemm_count {
  gemm_shape shape;
  std::uint64_t calls = 0;
  friend bool operator==(const gemm_count&, const gemm_count&) = default;
};
// add_gemms(list, shape, calls): `calls` gemms of `shape` added to that shape's entry of list
// (appended if new, so a list keeps its shapes in first-use order)
inline void add_gemms(std::vector<gemm_count>& list, const gemm_shape& shape, std::uint64_t calls) {
  auto it =
      std::find_if(list.begin(), list.end(), [&](const gemm_count& g) { return g.shape == shape; });
  if (it == list.end()) it = list.insert(list.end(), {shape, 0});
  it->calls += calls;
}
// sort_by_shape(list): list in shape order (to compare lists made in different orders)
inline void sort_by_shape(std::vector<gemm_count>& list) {
  std::sort(list.begin(), list.end(),
            [](const gemm_count& a, const gemm_count& b) { return a.shape < b.shape; });
}

/// What an operation is, as plans read it (plan/enumerate.hpp prices each kind its own way).
enum class operation_kind : std::uint8_t {
  other,          // priced by what it communicated, streamed and made, as counted
  einsum,         // dims: the two operands' and the result's; its gemm shapes recorded
  attention,      // dims: q's, k's, v's and the result's (nn/fused_attention.hpp)
  reduce,         // dims: the operand's and the result's; the dims between summed
  take,           // dims: the table's, the ids' and the result's (ops/embedding.hpp)
  softmax,        // row by row along `over`; dims: the operand's
  logsumexp,      // the same, priced as the reductions it runs
  layer_norm,     // row by row along `over`, priced as a softmax
  reshape,        // dims: the operand's and the result's
  update,         // an optimizer's update of one variable; `sharded`: of its stripe alone
  gradient_sums,  // the sums across ranks that complete gradients (the gradient buckets, a
                  // node's deferred partial sums): an estimate prices them from the gradients
};

/// How an einsum made its product and output (ops/einsum.hpp says when each applies); none for
/// an operation that is no einsum.
enum class einsum_strategy : std::uint8_t {
  none,
  ring_reduce_scatter,  // one gemm per block, summed around the ring into the scattered output
  ring_allreduce,       // the same ring, then an allgather: the product fused with its allreduce
  in_place,             // gemm writes the output as it lies ([batch, M, N])
  transposed,           // gemm writes it as C^T = B^T A^T ([batch, N, M])
  strided,              // in place, rows a leading dimension apart, each batch dim its stride
  strided_transposed,   // the same, transposed
  copied,               // gemm into a buffer in [batch, M, N], then one transposing copy
};

/// strategy_name(s): "ring_reduce_scatter", ..., "copied"; "" for none
constexpr std::string_view strategy_name(einsum_strategy s) {
  constexpr std::array<std::string_view, 8> names{
      "",        "ring_reduce_scatter", "ring_allreduce", "in_place", "transposed",
      "strided", "strided_transposed",  "copied"};
  return names[static_cast<std::size_t>(s)];
}

/// @brief An operation as it records itself in the counters: the row's name, and the fields
/// plans read (its kind, its operands' and result's dims, the dim it runs along). The
/// library's operations describe themselves so (detail::listed_operation, row_operation); a
/// user's operation may too, and is then planned and priced as the kind it names
/// (docs/plans.md).
struct operation_descriptor {
  std::string name;  // "einsum [batch, io] x [io, hidden] -> [batch, hidden]": the row's identity
  operation_kind kind = operation_kind::other;
  std::vector<std::vector<std::string>> dims;  // each operand's dims, the result's last
  std::string over;                            // softmax, logsumexp, layer_norm: their dim
  bool sharded = false;                        // update: of the variable's stripe alone
  friend bool operator==(const operation_descriptor&, const operation_descriptor&) = default;
};

// named_operation(name): an operation of kind other, known by its name alone
inline operation_descriptor named_operation(std::string name) {
  return {std::move(name), operation_kind::other, {}, {}, false};
}

namespace detail {
// bracket(out, dims): appends "[a, b]"
inline void bracket(std::string& out, const std::vector<std::string>& dims) {
  out += '[';
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += dims[i];
  }
  out += ']';
}
// listed_operation(kind, word, dims, between): an operation of operands and a result, named
// "<word> [a's dims] <between> [b's dims] ... -> [the result's dims]"
MESHPP_KERNEL inline operation_descriptor listed_operation(
    operation_kind kind, std::string_view word,
    std::initializer_list<std::span<const std::string_view>> dims,
    std::string_view between = " x ") {
  operation_descriptor d{std::string(word), kind, {}, {}, false};
  for (const auto& list : dims) d.dims.emplace_back(list.begin(), list.end());
  for (std::size_t i = 0; i < d.dims.size(); ++i) {
    d.name += i == 0 ? " " : i + 1 == d.dims.size() ? " -> " : between;
    bracket(d.name, d.dims[i]);
  }
  return d;
}
// row_operation(kind, word, over, dims): an operation along one dim of its operand, named
// "<word> over <over> of [the operand's dims]"
MESHPP_KERNEL inline operation_descriptor row_operation(operation_kind kind, std::string_view word,
                                                        std::string_view over,
                                                        std::span<const std::string_view> dims) {
  operation_descriptor d{
      std::string(word), kind, {{dims.begin(), dims.end()}}, std::string(over), false};
  d.name += " over " + d.over + " of ";
  bracket(d.name, d.dims[0]);
  return d;
}
}  // namespace detail

/// @brief What one operation (in one phase) communicated and computed, over all its runs.
struct operation_count {
  std::string phase;  // "forward", "backward", "optimizer", or a name given to phase()
  std::string name;   // the operation and its dims
  operation_kind kind = operation_kind::other;  // the rest of its operation_descriptor
  std::vector<std::vector<std::string>> dims;
  std::string over;
  bool sharded = false;
  std::uint64_t runs = 0;
  einsum_strategy strategy = einsum_strategy::none;  // an einsum's, as its last run chose
  struct entry {
    collective kind;
    unsigned mask;  // the mesh dims, as a bit set
    collective_count count;
    friend bool operator==(const entry&, const entry&) = default;
  };
  std::vector<entry> collectives;  // in first-use order
  std::uint64_t flops = 0;         // einsum flops on this rank
  std::vector<gemm_count> gemms;   // the gemm calls making them, per shape, in first-use order
  std::uint64_t bytes_made = 0;    // bytes of the tensor slices it made on this rank
  // bytes its memory-bound passes read, or wrote to scratch, beyond the slices it made: the
  // operands of an evaluation or a reduction, einsum's copies of operands into the order its
  // products need (the products' own reads are in their flops)
  std::uint64_t bytes_streamed = 0;
  std::vector<tensor_layout> layouts;  // the distinct layouts of the tensors it made, in order
  double seconds = 0;                  // wall time inside it on this rank, when timed
  // equal counts: phase, name, runs, collectives, flops, bytes and layouts (not seconds)
  friend bool operator==(const operation_count& a, const operation_count& b) {
    return a.phase == b.phase && a.name == b.name && a.runs == b.runs && a.strategy == b.strategy &&
           a.collectives == b.collectives && a.flops == b.flops && a.gemms == b.gemms &&
           a.bytes_made == b.bytes_made && a.bytes_streamed == b.bytes_streamed &&
           a.layouts == b.layouts;
  }
};

/// @brief The counters of one mesh. Recording is an array increment: no allocation, no lock
/// (a mesh is used by one thread per rank, as MPI communicators are); with by_operation on, a
/// search of a short list as well.
class counters {
 public:
  /// @brief An open operation (or phase) scope: counts go to it until it closes.
  class scope {
   public:
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    ~scope() {
      if (!c_) return;
      c_->charge();
      if (phase_)
        c_->phase_ = std::move(previous_.name);
      else
        c_->operation_ = std::move(previous_);
    }

   private:
    friend class counters;
    scope(counters* c, bool phase, operation_descriptor d) : c_(c), phase_(phase) {
      if (!c_) return;
      c_->charge();
      if (phase) {
        previous_.name = std::move(c_->phase_);
        c_->phase_ = std::move(d.name);
      } else {
        previous_ = std::move(c_->operation_);
        c_->operation_ = std::move(d);
        ++c_->current().runs;
      }
    }
    counters* c_;
    bool phase_;
    operation_descriptor previous_;
  };

  // by_operation(on, timed): count per operation too (from now on), and with timed, charge
  // wall time to the operations as well; by_operation(), timed(): whether it does
  void by_operation(bool on, bool timed = false) {
    by_operation_ = on;
    timed_ = on && timed;
    mark_ = clock::now();
  }
  bool by_operation() const { return by_operation_; }
  bool timed() const { return timed_; }
  // unattributed_seconds(): timed wall time charged to no row (see the top)
  double unattributed_seconds() const { return unattributed_seconds_; }

  // operation(describe): a scope for one run of an operation; describe() gives its name (a
  // string: an operation of kind other) or its operation_descriptor, and is called only when
  // counting by operation (so describing costs nothing otherwise)
  template <class Describe>
  [[nodiscard]] scope operation(Describe&& describe) {
    if (!by_operation_) return scope(nullptr, false, {});
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(describe())>, operation_descriptor>)
      return scope(this, false, describe());
    else
      return scope(this, false, named_operation(std::string(describe())));
  }
  // The phases meshpp itself names: operations outside any phase scope count under
  // forward_phase; backward() opens backward_phase, optimizer::step() optimizer_phase. Plans and
  // the layout enumeration read these names (plan/detail/enumerate_model.hpp), so both sides
  // spell them through these constants.
  static constexpr std::string_view forward_phase = "forward";
  static constexpr std::string_view backward_phase = "backward";
  static constexpr std::string_view optimizer_phase = "optimizer";

  // phase(name): a scope for a phase of a step ("backward", "optimizer")
  [[nodiscard]] scope phase(std::string name) {
    return scope(by_operation_ ? this : nullptr, true, named_operation(std::move(name)));
  }
  // made(bytes, layout): an operation made a tensor slice of this many bytes; layout() (called
  // only when counting by operation) gives the tensor's layout, kept once per operation
  template <class Layout>
  void made(std::uint64_t bytes, Layout&& layout) {
    if (by_operation_) made_layout(bytes, std::forward<Layout>(layout)());
  }
  // streamed(bytes): the operation open now read (or wrote to scratch) this many bytes in
  // memory-bound passes (operation_count::bytes_streamed); bytes() is called only when counting
  // by operation
  template <class Bytes>
  void streamed(Bytes&& bytes) {
    if (by_operation_) current().bytes_streamed += std::forward<Bytes>(bytes)();
  }
  // mesh_dim_names(): the mesh dims in mesh order (bit i of a mask is dim i)
  const std::vector<std::string>& mesh_dim_names() const { return mesh_dim_names_; }
  // operations(): the counts per operation, in the order the operations first ran
  const std::vector<operation_count>& operations() const { return operations_; }

  /// @param mesh_dim_names the mesh dims in mesh order (bit i of a mask is dim i)
  /// @param mesh_sizes their sizes, for the rule that a group of one rank counts nothing
  ///        (empty: every group counts)
  explicit counters(std::vector<std::string> mesh_dim_names, std::vector<int> mesh_sizes = {})
      : mesh_dim_names_(std::move(mesh_dim_names)), mesh_sizes_(std::move(mesh_sizes)) {
    for (auto& per_mask : by_kind_) per_mask.assign(std::size_t{1} << mesh_dim_names_.size(), {});
  }

  // record(c, mask, values, bytes_sent): one call of collective c over the mesh dims in mask,
  // of `values` values of this rank, sending bytes_sent; a group of one rank counts nothing
  // (by operation, the call is listed with zero counts: see the top)
  void record(collective c, unsigned mask, std::uint64_t values, std::uint64_t bytes_sent) {
    if (group_of_one(mask)) {
      if (by_operation_) entry_of(c, mask);
      return;
    }
    auto& k = by_kind_[static_cast<std::size_t>(c)][mask];
    ++k.calls;
    k.values += values;
    k.bytes_sent += bytes_sent;
    if (by_operation_) {
      auto& e = entry_of(c, mask);
      ++e.count.calls;
      e.count.values += values;
      e.count.bytes_sent += bytes_sent;
    }
  }
  // strategy(s): the einsum open now made its product by strategy s (ops/einsum.hpp)
  void strategy(einsum_strategy s) {
    if (by_operation_) current().strategy = s;
  }
  // group_of_one(mask): the group over the mesh dims in mask has one rank (known sizes only)
  bool group_of_one(unsigned mask) const {
    if (mesh_sizes_.empty()) return false;
    for (std::size_t i = 0; i < mesh_sizes_.size(); ++i)
      if ((mask & (1u << i)) && mesh_sizes_[i] != 1) return false;
    return true;
  }
  // record_einsum(flops, shape, calls): an einsum's local products, `calls` gemms of `shape`
  // making `flops` (2 m n k each)
  void record_einsum(std::uint64_t flops, const gemm_shape& shape = {}, std::uint64_t calls = 0) {
    ++einsum_calls_;
    einsum_flops_ += flops;
    if (!by_operation_) return;
    auto& op = current();
    op.flops += flops;
    if (calls != 0) add_gemms(op.gemms, shape, calls);
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
    operations_.clear();
    unattributed_seconds_ = 0;
    mark_ = clock::now();
  }

  // mesh_dims_text(mask): "rows,cols" for the mesh dims in the bit set mask; "(none)" for none
  std::string mesh_dims_text(unsigned mask) const {
    std::string over;
    for (std::size_t i = 0; i < mesh_dim_names_.size(); ++i) {
      if (!(mask & (1u << i))) continue;
      if (!over.empty()) over += ',';
      over += mesh_dim_names_[i];  // not `"," + std::string(..)`: a g++ 12 -Wrestrict warning
    }
    return over.empty() ? "(none)" : over;
  }

  /// A table of every non-zero counter: collective, mesh dims, calls, values, bytes sent.
  std::string report() const {
    std::string out = "collective       over                calls        values    bytes sent\n";
    char line[160];
    for (std::size_t c = 0; c < collective_kinds; ++c) {
      for (unsigned mask = 0; mask < by_kind_[c].size(); ++mask) {
        const auto& k = by_kind_[c][mask];
        if (k.calls == 0) continue;
        std::snprintf(line, sizeof line, "%-16s %-16s %8llu %13llu %13llu\n",
                      std::string(collective_name(static_cast<collective>(c))).c_str(),
                      mesh_dims_text(mask).c_str(), static_cast<unsigned long long>(k.calls),
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
  using clock = std::chrono::steady_clock;

  // entry_of(c, mask): the current row's entry of collective c over mask, made if new
  operation_count::entry& entry_of(collective c, unsigned mask) {
    auto& list = current().collectives;
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const auto& e) { return e.kind == c && e.mask == mask; });
    if (it == list.end()) it = list.insert(list.end(), {c, mask, {}});
    return *it;
  }

  // find_current(): the row of the operation and phase open now, or null if it has none yet
  operation_count* find_current() {
    const std::string& name = operation_.name.empty() ? unnamed : operation_.name;
    const std::string& phase = phase_.empty() ? forward : phase_;
    if (last_ < operations_.size() && operations_[last_].name == name &&
        operations_[last_].phase == phase)
      return &operations_[last_];
    for (std::size_t i = 0; i < operations_.size(); ++i) {
      if (operations_[i].name == name && operations_[i].phase == phase) {
        last_ = i;
        return &operations_[i];
      }
    }
    return nullptr;
  }
  // charge(): the time since the last scope change, to the row current until now
  void charge() {
    if (!timed_) return;
    const auto now = clock::now();
    const double s = std::chrono::duration<double>(now - mark_).count();
    mark_ = now;
    if (auto* row = find_current())
      row->seconds += s;
    else
      unattributed_seconds_ += s;
  }
  operation_count& current() {
    if (auto* row = find_current()) return *row;
    const std::string& name = operation_.name.empty() ? unnamed : operation_.name;
    const std::string& phase = phase_.empty() ? forward : phase_;
    operation_count made_now;
    made_now.phase = phase;
    made_now.name = name;
    made_now.kind = operation_.kind;
    made_now.dims = operation_.dims;
    made_now.over = operation_.over;
    made_now.sharded = operation_.sharded;
    operations_.push_back(std::move(made_now));
    last_ = operations_.size() - 1;
    return operations_.back();
  }
  // made_layout(bytes, l): made() when counting by operation (one function for every layout)
  MESHPP_KERNEL void made_layout(std::uint64_t bytes, tensor_layout l) {
    auto& op = current();
    op.bytes_made += bytes;
    if (std::find(op.layouts.begin(), op.layouts.end(), l) == op.layouts.end())
      op.layouts.push_back(std::move(l));
  }
  inline static const std::string unnamed = "(expressions, makers, copies)";
  inline static const std::string forward = std::string(forward_phase);

  std::vector<std::string> mesh_dim_names_;
  std::vector<int> mesh_sizes_;  // empty: unknown (every group counts)
  bool by_operation_ = false;
  bool timed_ = false;
  clock::time_point mark_{};
  double unattributed_seconds_ = 0;
  operation_descriptor operation_;
  std::string phase_;
  std::vector<operation_count> operations_;
  std::size_t last_ = 0;
  std::array<std::vector<collective_count>, collective_kinds> by_kind_;
  std::uint64_t einsum_calls_ = 0;
  std::uint64_t einsum_flops_ = 0;
};

}  // namespace meshpp
