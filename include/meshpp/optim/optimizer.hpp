// meshpp/optim/optimizer.hpp — what every optimizer shares: the variables it trains, one slot
// of state per variable, and step().
//
//   mp::adam opt({.learning_rate = 1e-3}, w1, w2);   // or opt.add(w1, w2) later
//   mp::backward(loss);                              // fills w1.grad(), w2.grad()
//   opt.step();                                      // updates w1, w2; clears their grads
//
// Variables of any tensor types (dims, layouts, value types) are trained by one optimizer:
// each gets a slot, a class template on its tensor type behind a virtual update(), that owns
// the variable's state tensors (momentum, moments, factored statistics). The state is created
// at the variable's first update, laid out exactly as the variable (or, for statistics that
// drop dims, as the variable restricted to the dims they keep), so an update reads the local
// slices of parameter, gradient and state side by side and needs no sums unless its rule
// reduces over a dim (Adafactor; see optim/adafactor.hpp).
//
// Sharded updates: a variable replicated over mesh dims (data parallelism: the weights are
// whole on every rank of the batch's mesh dim) would have each replica compute the same
// update. When the rule is element-wise and heavy enough to gain (Adam, AdamW: shardable()),
// the p replicas split the local slice instead: each updates its 1/p share and one allgather
// over the replicas (values: the share; bytes sent: the others' shares of the slice) brings
// the rest, in the operation "update <name> (sharded)". Results are the same bits as without
// sharding (the rule runs per element; the batch width changes no result, core/lanes.hpp).
// Plain SGD reads 3 arrays an element, and its step at 2 ranks was 3% slower sharded (the
// allgather costs more than half its pass), so SGD does not shard.
// Whether sharding gains depends on the machine: it trades 1 - 1/p of the update's arithmetic
// and memory traffic for an allgather, which costs more than it saves where the cores move
// data slowly between them (docs/training.md, Optimizers). So by default (sharding::measured)
// each variable's updates are timed both ways on its first updates and the faster way is kept:
// update 1 sharded (untimed: the state is made then), updates 2-3 sharded and timed, update 4
// whole and untimed (it completes the state first), 5-6 whole and timed, each way's fastest;
// at update 7 one MPI_Allreduce (MAX) of the two times over the variable's mesh agrees the
// choice on every rank, kept from then on. A variable without replicas is treated as under
// sharding::on (nothing to time). Results are the same bits either way.
// set_sharding(sharding::on) or (sharding::off) fixes it instead (set_sharded_updates(bool)
// is the same). Plans (a planned mesh, which times nothing) follow the same schedule and
// choose sharded at update 7: a plan of up to 6 steps makes the same updates as the run.
// The state stays in shares until a checkpoint saves it: save() calls complete_state() on
// every rank first (one allgather per state tensor, in the phase "checkpoint"); a load
// replaces the state whole; the first whole update after sharded ones (sharding::off, or
// measured's update 4 of its trial) completes it too. Adafactor's rule reduces over rows and
// columns, so each rank updates the whole slice.
//
// Sharded state (set_shard(shard_level::state), ZeRO's stage 1): each replica keeps only its
// share of an element-wise rule's state (Adam's m and v, SGD's momentum), 1/p of it, and
// always updates that share, then allgathers the variable as above: the state's memory per
// rank is 1/p, the communication the same as sharded updates'. Results are the same bits as
// without. A checkpoint saves the state whole (an allgather of each state array over the
// replicas, in the phase "checkpoint") and a load keeps each rank's share of it, so a sharded
// checkpoint loads into an unsharded program and back.
//
// step() is collective like every meshpp operation: all ranks call it with the same variables,
// whose gradients are present on all ranks alike (backward() is collective too). A variable
// without a gradient is skipped: its value and state stay as they were, and its own count of
// updates (the t of bias corrections and schedules) does not advance.
//
// Hyperparameters out of range (a negative or non-finite learning rate, a beta or momentum
// outside [0, 1), an epsilon <= 0, ...) throw meshpp::error naming the optimizer, the
// hyperparameter and its value, from the constructor and from set_learning_rate(); every rank
// passes the same options, so every rank throws alike.
//
// NaN and Inf in a gradient are not checked (that would cost a pass over every gradient and
// an allreduce per step): they propagate, as in torch.optim and optax. SGD and Adam(W) update
// element by element, so a NaN gradient element makes that element of the variable (and of
// its state) NaN and leaves the others as without it; Adafactor's statistics are means over
// rows and columns, so one NaN makes the whole variable NaN (factored: at once, through
// mean_R(v_r); unfactored: at the next step, through RMS(p)). A NaN gradient comes from a NaN
// loss, and the loss is the same on every rank: check it (std::isfinite) before step() to skip
// a step or stop.
//
// The learning rate of each step from a schedule: optim/schedule.hpp (apply_schedule before
// step()); global-norm gradient clipping between backward() and step(): optim/clip.hpp.
//
// Writing a new optimizer (optim/sgd.hpp is the shortest example, docs/extending.md a complete
// one):
//   struct my_options { double learning_rate = 0.1; ... };      // the hyperparameters
//   template <class Tensor, class Options>
//   class my_slot : public mp::optimizer_slot<Tensor> {         // one variable and its state
//    public:
//     my_slot(mp::variable<Tensor> v, std::shared_ptr<const Options> o);
//     void update() override;   // parameter() from gradient() and the state, local slices
//   };                          // (an element-wise rule may also return true from
//                               // elementwise(), update only the elements shard() names and
//                               // keep its state in state arrays: optim/adam.hpp)
//   class my_opt : public mp::basic_optimizer<my_options, my_slot> {
//    public:
//     explicit my_opt(my_options o) : basic_optimizer(std::move(o)) {}
//     double learning_rate() const override;          // options().learning_rate
//     void set_learning_rate(double rate) override;   // mutable_options().learning_rate = rate
//   };
// For checkpoints (io/checkpoint.hpp) the slot also overrides visit_state(state_visitor&) and
// the options get a visit_hyperparameters(v, o) found by argument-dependent lookup; without
// them, saving such an optimizer throws meshpp::error.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/autodiff/parameters.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/lanes.hpp"
#include "meshpp/core/state.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp {

namespace offending {
template <class X>
inline constexpr bool optimizer_argument_is_not_a_variable = false;
template <class T>
inline constexpr bool variable_values_are_not_floating_point = false;
}  // namespace offending

/// What an optimizer keeps in shares over each variable's replicas (the mesh dims its layout
/// does not split it over: the data-parallel dims), as ZeRO's stages (Rajbhandari et al. 2020)
/// and PyTorch FSDP name them: none (every replica holds all of it); state (the optimizer's
/// state: each replica holds and updates its 1/p share, then one allgather of the variable
/// over the replicas, as sharding::on); gradients (the state, and the gradients' sums over the
/// replicas reduce-scattered instead of allreduced: each replica sums only the share it
/// updates); parameters (level 3, not built: asking for it throws).
enum class shard_level { none = 0, state = 1, gradients = 2, parameters = 3 };

namespace detail {

// option_text(v): a hyperparameter as it would be written: "-0.1", "1e-08", "nan"
inline std::string option_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// check_option(who, name, value, ok, range): throws meshpp::error "meshpp::<who>: <name> must
// be <range>, got <value>" unless ok
inline void check_option(std::string_view who, std::string_view name, double value, bool ok,
                         std::string_view range) {
  if (ok) return;
  throw error("meshpp::" + std::string(who) + ": " + std::string(name) + " must be " +
              std::string(range) + ", got " + option_text(value));
}
// The usual ranges: finite and >= 0 (rates, decays), finite and > 0 (epsilons, thresholds),
// [0, 1) (betas, momentum: at 1 or more the average never forgets, or grows)
inline void check_non_negative(std::string_view who, std::string_view name, double value) {
  check_option(who, name, value, std::isfinite(value) && value >= 0, "finite and >= 0");
}
inline void check_positive(std::string_view who, std::string_view name, double value) {
  check_option(who, name, value, std::isfinite(value) && value > 0, "finite and > 0");
}
inline void check_below_one(std::string_view who, std::string_view name, double value) {
  check_option(who, name, value, value >= 0 && value < 1, "in [0, 1)");
}

/// One variable of an optimizer and its state, of any tensor type (the interface the optimizer
/// holds its slots by; optimizer_slot<Tensor> implements all of it but update()).
class slot_base {
 public:
  virtual ~slot_base() = default;
  // node(): the variable's graph node (its identity: copies of a variable share it)
  virtual const node_base* node() const = 0;
  virtual const std::string& name() const = 0;
  virtual bool has_grad() const = 0;
  // check(): throws meshpp::error if the gradient does not fit the variable (every rank alike)
  virtual void check() const = 0;
  // update(): the optimizer's rule, from the gradient into the value and the state, over the
  // local elements shard() names
  virtual void update() = 0;
  // shardable(): the rule reads element i of the gradient and the state only to write element
  // i of the variable and the state, and reads enough an element that replicas gain by
  // splitting it (Adam), so step() may shard it
  virtual bool shardable() const { return false; }
  // elementwise(): the rule reads element i of the gradient and the state only to write element
  // i of the variable and the state, so its state can be kept in shares (shard_level::state)
  // even where sharing the update does not gain by default (SGD with momentum)
  virtual bool elementwise() const { return shardable(); }
  // has_replica_dims(): the variable's layout leaves mesh dims to replicate it over (a
  // data-parallel dim): what shard_level::state shards its state over
  virtual bool has_replica_dims() const = 0;
  // keeps_state(): the rule keeps state between updates (SGD does only with momentum)
  virtual bool keeps_state() const { return true; }
  // set_shard(level): from shard_level::state on, the state kept in shares over the replicas
  // from its creation (or its next load) on, each rank holding its share alone; from
  // shard_level::gradients on, the gradient's sums over the replicas reduce-scattered too
  virtual void set_shard(shard_level level) = 0;
  virtual bool state_sharded() const = 0;
  // state_bytes(): the bytes of state this rank holds for the variable now
  virtual std::size_t state_bytes() const = 0;
  // replicated(): the variable has replicas to share its update with (more than one rank
  // holds its local slice); planning(): its mesh is a planned one (nothing runs)
  virtual bool replicated() const = 0;
  virtual bool planning() const = 0;
  // wait_gradient(): returns once the gradient is complete (its bucket's sum done), so that
  // what follows is timed without the wait
  virtual void wait_gradient() const = 0;
  // apply(shard): update() on the whole local slice, or with shard (shardable() only) on this
  // rank's share and then the other replicas' shares of the variable (see optimizer::step)
  virtual void apply(bool shard) = 0;
  // complete_state(): the other replicas' shards of the state, where sharded updates left this
  // rank's copy stale there (before a checkpoint saves the state); collective over them
  virtual void complete_state() = 0;
  // state_replaced(): the whole state was just loaded (it is complete)
  virtual void state_replaced() = 0;
  // state_in_shares(): sharded updates left the state stale outside this rank's share
  virtual bool state_in_shares() const = 0;
  // mesh_world(): the communicator of all ranks of the variable's mesh (the replicas that
  // complete_state() waits for are among them)
  virtual MPI_Comm mesh_world() const = 0;
  virtual void clear_grad() = 0;
  // record_layout(): records the variable's layout in the operation open now (no bytes made:
  // the update writes it in place), so a plan says which variable each update row is for
  virtual void record_layout() const = 0;
  // mesh_counters(): the counters of the variable's mesh (what step() counts its update in)
  virtual counters& mesh_counters() const = 0;
  // gradient_squares(): the sum of the squares of the gradient's local elements, on the first
  // of the ranks holding its local slice (coordinate 0 along the mesh dims the variable is
  // replicated over: mesh_base::leads), 0 on the others and on a planned mesh, so that a sum
  // over the mesh counts each element once; waits for the gradient's sum. scale_gradient(f):
  // the gradient's local elements times f. grad_mesh(): the variable's mesh.
  virtual double gradient_squares() const = 0;
  virtual void scale_gradient(double factor) = 0;
  virtual const mesh_base& grad_mesh() const = 0;
  // visit_state(v): a checkpoint's walk over the state (core/state.hpp); by default an error
  // naming the variable, on every rank alike (a slot that does not say what its state is
  // cannot be saved)
  virtual void visit_state(state_visitor&) {
    throw error("meshpp::checkpoint: the optimizer slot of variable '" + name() +
                "' does not save its state (its slot does not override visit_state)");
  }
};

// the errors of a gradient that does not fit its variable (optimizer_slot::check)
[[noreturn]] MESHPP_KERNEL inline void gradient_on_another_mesh(const std::string& name) {
  throw error("meshpp::optimizer::step(): the gradient of variable '" + name +
              "' lives on another mesh than the variable");
}
[[noreturn]] MESHPP_KERNEL inline void gradient_sizes_differ(const std::string& name,
                                                             const std::string& gradient,
                                                             const std::string& variable) {
  throw error("meshpp::optimizer::step(): the gradient of variable '" + name + "' has sizes " +
              gradient + ", the variable " + variable);
}

// square_sum<T>(n, x): the sum of x[i]^2 over n elements, in double; scale_in_place<T>(n, x,
// f): x[i] *= f. Each one pass, compiled once per element type.
template <class T>
MESHPP_KERNEL double square_sum(std::size_t n, const T* x) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<double>(x[i]);
    sum += v * v;
  }
  return sum;
}
template <class T>
MESHPP_KERNEL void scale_in_place(std::size_t n, T* x, T factor) {
  for_each_lane<T>(
      n,
      [&](auto& v) {
        using V = std::remove_cvref_t<decltype(v)>;
        v *= V(factor);
      },
      x);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE double square_sum<float>(std::size_t, const float*);
MESHPP_KERNEL_INSTANCE double square_sum<double>(std::size_t, const double*);
MESHPP_KERNEL_INSTANCE void scale_in_place<float>(std::size_t, float*, float);
MESHPP_KERNEL_INSTANCE void scale_in_place<double>(std::size_t, double*, double);
#endif

}  // namespace detail

/// @brief The base of an optimizer's slot: one variable (of tensor type Tensor) and, in the
/// derived class, its state. A derived slot overrides update() and, for checkpoints,
/// visit_state(state_visitor&); it reads parameter() and gradient() (the local slices of both
/// are laid out alike) and makes state tensors laid out as the variable with
/// zeros_like_parameter(), so its rule needs no sums. An element-wise rule keeps its state in
/// state arrays instead (zeros_like_state(), one value per element of state_range(), saved by
/// visit_state_array), returns true from elementwise() (and from shardable() if sharing the
/// update gains by default), updates only the local elements shard() names, and lists its
/// arrays in state_arrays() (the same list on every replica: complete_state() allgathers each;
/// an array left out would be saved stale). Its state can then be kept in shares over the
/// variable's replicas (shard_level::state).
/// @tparam Tensor the variable's meshpp::tensor type
template <class Tensor>
class optimizer_slot : public detail::slot_base {
 public:
  using tensor_type = Tensor;
  using value_type = typename Tensor::value_type;

  explicit optimizer_slot(variable<Tensor> v) : variable_(std::move(v)) {}

  // update(): the optimizer's rule, from gradient() into parameter() and the state, for the
  // local elements [shard().begin, shard().end); called by step() on every rank alike, only
  // when the variable has a gradient (which step() clears)
  void update() override = 0;

  // apply(shard): a shardable rule, when step() shards it, on a variable replicated over mesh
  // dims (the dims its layout does not use) is sharded over those replicas: each updates the
  // elements shard() names, a 1/p share of its local slice (p the replicas; shares begin at
  // whole chunks of 16 elements), and an allgather over the replicas brings the others' shares
  // of the variable. The state (the same shares of it) stays stale where others updated it
  // until complete_state(). Any other rule updates the whole slice, with no communication
  // (but for completing a state that earlier sharded updates left in shares).
  void apply(bool shard) final {
    const std::size_t n = variable_.value().local().size();
    const unsigned mask = replica_mask();
    if (state_sharded_) shard = true;  // the state holds this rank's share alone
    if (!shard || !elementwise() || mask == 0) {
      complete_state();  // sharded before (set_sharded_updates(false) since): whole again
      shard_ = {0, n};
      update();
      return;
    }
    const auto counts = shard_counts(n);
    shard_ = share_of(n);
    update();
    shard_ = {0, n};
    share(variable_.value(), counts);
    state_stale_ = counts.size() > 1 && !state_sharded_;
  }

  void complete_state() final {
    if (!state_stale_) return;
    const auto scope = mesh_counters().operation([&] { return "complete the state of " + name(); });
    const auto counts = shard_counts(variable_.value().local().size());
    for (state_array* a : state_arrays())
      share_span(variable_.value().mesh(), std::span<value_type>(a->data(), a->size()), counts);
    state_stale_ = false;
  }
  bool has_replica_dims() const final { return replica_mask() != 0; }
  void set_shard(shard_level level) final {
    const bool scatter = level >= shard_level::gradients && elementwise();
    // (a rule without state shards its updates only to update the shares of a gradient)
    state_sharded_ = elementwise() && level >= shard_level::state && (keeps_state() || scatter);
    variable_.node()->scatter_over = scatter ? replica_mask() : 0u;
  }
  bool state_sharded() const final { return state_sharded_; }
  // by default the state arrays'; a rule that keeps state tensors counts them itself
  std::size_t state_bytes() const override {
    std::size_t n = 0;
    for (const state_array* a : const_cast<optimizer_slot*>(this)->state_arrays()) n += a->size();
    return n * sizeof(value_type);
  }
  void state_replaced() final { state_stale_ = false; }
  bool state_in_shares() const final { return state_stale_; }
  bool replicated() const final {
    return replica_mask() != 0 && variable_.value().mesh().group_size(replica_mask()) > 1;
  }
  bool planning() const final { return variable_.value().mesh().planning(); }
  void wait_gradient() const final { variable_.node()->settle(); }
  MPI_Comm mesh_world() const final { return MPI_Comm(variable_.value().mesh().world()); }

  double gradient_squares() const final {
    const Tensor& g = gradient();  // (waits for its sum)
    if (g.mesh().planning()) return 0;
    // summed in shares: each replica its own share, so each element counts once (a range, not
    // a structured binding: clang 14 cannot capture those in a lambda)
    const bool in_shares = variable_.node()->grad_in_shares;
    const element_range r =
        in_shares ? share_of(g.local().size()) : element_range{0, g.local().size()};
    if (!in_shares && !g.mesh().leads(replica_mask())) return 0;
    mesh_counters().streamed([&] { return (r.end - r.begin) * sizeof(value_type); });
    return detail::square_sum<value_type>(r.end - r.begin, g.local().data() + r.begin);
  }
  void scale_gradient(double factor) final {
    variable_.node()->settle();
    Tensor& g = *variable_.node()->grad;
    // summed in shares: the rest of the slice is this rank's partial sums, which no one reads
    const element_range r = variable_.node()->grad_in_shares ? share_of(g.local().size())
                                                             : element_range{0, g.local().size()};
    mesh_counters().streamed([&] { return 2 * (r.end - r.begin) * sizeof(value_type); });
    if (g.mesh().planning()) return;
    detail::scale_in_place<value_type>(r.end - r.begin, g.local().data() + r.begin,
                                       static_cast<value_type>(factor));
  }
  const mesh_base& grad_mesh() const final { return variable_.value().mesh(); }

  const detail::node_base* node() const override { return variable_.node().get(); }
  const std::string& name() const override { return variable_.name(); }
  // has_grad() and check() read the gradient's presence, sizes and mesh, which are known while
  // its bucket still sums it; update() waits for that bucket (through grad())
  bool has_grad() const override { return variable_.node()->grad.has_value(); }
  void clear_grad() override { variable_.zero_grad(); }
  counters& mesh_counters() const override { return variable_.value().mesh().counters(); }
  void record_layout() const override {
    const Tensor& v = variable_.value();
    v.mesh().counters().made(0, [&] { return v.layout_record(); });
  }

  // The gradient has the variable's type; sizes and mesh are what can still differ (a grad()
  // assigned by hand). Both are the same on every rank, so every rank throws alike.
  void check() const override {
    const Tensor& v = variable_.value();
    const Tensor& g = *variable_.node()->grad;
    if (!(g.mesh() == v.mesh())) detail::gradient_on_another_mesh(name());
    if (g.global_shape() != v.global_shape())
      detail::gradient_sizes_differ(name(), to_string(g.sizes()), to_string(v.sizes()));
  }

 protected:
  // parameter(): the variable's value, to update in place
  Tensor& parameter() { return variable_.value(); }
  // gradient(): the variable's complete gradient (waits for its allreduce if still running);
  // under shard_level::gradients only the elements shard() names are summed
  const Tensor& gradient() const {
    variable_.node()->settle();
    return *variable_.node()->grad;
  }
  // zeros_like_parameter(): a new state tensor: zeros, laid out exactly as the variable
  Tensor zeros_like_parameter() const {
    return Tensor(variable_.value().mesh(), variable_.value().sizes());
  }

  // An element-wise rule's state: one value per local element of the variable, or under
  // shard_level::state per element of this rank's share of them (state_range()). update()
  // reads element i of the local slice at index i - state_range().begin.
  using state_array = std::vector<value_type>;
  // zeros_like_state(): a new state array of zeros (counted as made, for plans)
  state_array zeros_like_state() const {
    const auto [begin, end] = state_range();
    const Tensor& v = variable_.value();
    v.mesh().counters().made((end - begin) * sizeof(value_type), [&] { return v.layout_record(); });
    return state_array(end - begin, value_type(0));
  }
  // visit_state_array(v, name, a): a checkpoint's walk over a state array that may not exist
  // yet, stored as a tensor laid out as the variable: saving a sharded one allgathers it over
  // the replicas into a whole slice first (collective over them; a whole slice's memory for
  // the moment of the save), loading keeps this rank's share of the file's
  void visit_state_array(state_visitor& v, std::string_view key, std::optional<state_array>& a) {
    const auto [begin, end] = state_range();
    switch (v.what()) {
      case state_visitor::mode::save: {
        if (!a) return;
        Tensor whole = zeros_like_parameter();
        std::copy(a->begin(), a->end(), whole.local().data() + begin);
        // (on every replica alike: a share may hold all of a small slice, or none of it)
        if (state_sharded_ && replicated() && v.writes())
          share(whole, shard_counts(whole.local().size()));
        v.tensor(key, view_of(whole));
        return;
      }
      case state_visitor::mode::check:
        if (v.has_tensor(key)) {
          Tensor scratch = zeros_like_parameter();
          v.tensor(key, view_of(scratch));
        }
        return;
      case state_visitor::mode::load:
        if (v.has_tensor(key)) {
          Tensor whole = zeros_like_parameter();
          v.tensor(key, view_of(whole));
          a.emplace(whole.local().data() + begin, whole.local().data() + end);
        } else {
          a.reset();
        }
        return;
    }
  }

  /// The local elements [begin, end) that update() updates: all of them, or this rank's share
  /// when the rule is element-wise and the variable replicated (see apply())
  struct element_range {
    std::size_t begin = 0, end = 0;
  };
  element_range shard() const { return shard_; }
  // count_passes(arrays): counts the update's memory traffic, `arrays` arrays of the shard's
  // elements read or written (Adam: p, g, m, v read, p, m, v written: 7), for plans
  void count_passes(std::size_t arrays) const {
    mesh_counters().streamed(
        [&] { return arrays * (shard_.end - shard_.begin) * sizeof(value_type); });
  }
  // state_arrays(): an element-wise rule's state arrays that exist now, which complete_state()
  // completes
  virtual std::vector<state_array*> state_arrays() { return {}; }

  // state_range(): the local elements the state holds: [0, n), or under shard_level::state on
  // a variable with replicas, this replica's share (the one its sharded updates update)
  element_range state_range() const {
    const std::size_t n = variable_.value().local().size();
    if (!state_sharded_ || replica_mask() == 0) return {0, n};
    return share_of(n);
  }
  // share_of(n): this replica's share of n local elements
  element_range share_of(std::size_t n) const {
    const auto& m = variable_.value().mesh();
    const auto r = detail::shard_of(n, static_cast<std::size_t>(m.group_size(replica_mask())),
                                    static_cast<std::size_t>(m.group_rank(replica_mask())));
    return {r.begin, r.end};
  }

 private:
  // the mesh dims the variable is replicated over (those its layout does not split it over)
  static constexpr unsigned replica_mask() {
    constexpr unsigned all = (1u << Tensor::mesh_type::ndims) - 1;
    return all & ~Tensor::split_mask();
  }
  // shard_counts(n): the replicas' shares of n local elements (the same on each: replicas hold
  // the same slice), in their group's order (core/divides.hpp)
  std::vector<std::size_t> shard_counts(std::size_t n) const {
    const unsigned mask = replica_mask();
    const auto p = static_cast<std::size_t>(variable_.value().mesh().group_size(mask));
    return detail::shard_counts(n, p);
  }
  // share(t, counts): each replica's share of t's local slice, to every replica (counted: one
  // allgather over the replica mesh dims)
  static void share(Tensor& t, const std::vector<std::size_t>& counts) {
    auto& local = t.local();
    share_span(t.mesh(), std::span<value_type>(local.data(), local.size()), counts);
  }
  static void share_span(const mesh_base& m, std::span<value_type> data,
                         const std::vector<std::size_t>& counts) {
    detail::allgather_blocks_over(m, replica_mask(), data, std::span<const std::size_t>(counts));
  }

  variable<Tensor> variable_;
  element_range shard_;
  bool state_stale_ = false;    // sharded updates have run since the state was last complete
  bool state_sharded_ = false;  // shard_level::state: the state holds this rank's share alone
};

/// How optimizer::step() shares an element-wise rule's update among a variable's replicas
/// (see the top of this header): off (every replica updates all of it), on (each its share,
/// then one allgather), measured (the default: whichever of the two its first updates timed
/// faster, agreed on every rank).
enum class sharding { off, on, measured };

/// @brief The base of every optimizer: its variables (one slot each) and its step count.
/// Not copyable (slots own state); movable.
class optimizer {
 public:
  virtual ~optimizer() = default;
  optimizer(const optimizer&) = delete;
  optimizer& operator=(const optimizer&) = delete;
  optimizer(optimizer&&) = default;
  optimizer& operator=(optimizer&&) = default;

  // step(): updates every variable that has a gradient from it, then clears the gradients.
  // Collective. Throws meshpp::error (on every rank, before any update) if a gradient does not
  // fit its variable.
  void step() {
    if (shard_ != shard_level::none) check_shardable(shard_, "step()");
    for (const auto& s : slots_) {
      if (s->has_grad()) s->check();
    }
    ++steps_;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const auto& s = slots_[i];
      if (!s->has_grad()) continue;
      const auto phase = s->mesh_counters().phase(std::string(counters::optimizer_phase));
      trial& t = trials_[i];
      const update_way way = how_to_update(*s, t);
      const bool shard = way.shard, timed = way.timed;  // (not bindings: a lambda reads shard)
      const auto scope = s->mesh_counters().operation([&] {
        return operation_descriptor{
            "update " + s->name() +
                std::string(shard ? detail::sharded_update_suffix : std::string_view()),
            operation_kind::update,
            {},
            {},
            shard};
      });
      s->record_layout();  // the variable's layout first (plan/enumerate.hpp reads it)
      if (timed) s->wait_gradient();
      const auto start = std::chrono::steady_clock::now();
      s->apply(shard);
      if (timed) {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        double& fastest = shard ? t.shared : t.whole;
        fastest = std::min(fastest, seconds);
      }
      ++t.updates;
      s->clear_grad();
    }
  }

  // set_shard(level): what the optimizer keeps in shares over the variables' replicas (see
  // shard_level), from the state's creation on: before the first step, or before a load
  // (which brings each rank its share). Throws meshpp::error, on every rank alike, after the
  // first step, for a level not built, and when a variable's rule cannot shard its state (not
  // element-wise: Adafactor) or no variable has a mesh dim to shard over (a model-parallel
  // layout); the same checks run at step() for variables added since.
  void set_shard(shard_level level) {
    if (steps_ > 0 && level != shard_)
      throw error("meshpp::optimizer::set_shard: the state exists after " + std::to_string(steps_) +
                  " steps; choose the level before the first step (or before loading a "
                  "checkpoint)");
    check_shardable(level, "set_shard");
    shard_ = level;
    for (const auto& s : slots_) s->set_shard(level);
  }
  shard_level shard() const { return shard_; }

  // set_sharding(how): how shardable rules on replicated variables share their updates among
  // the replicas from the next step on (the default: sharding::measured; see the top of
  // optim/optimizer.hpp); measured starts its timing again. Every rank alike.
  void set_sharding(sharding how) {
    sharding_ = how;
    for (trial& t : trials_) t = trial{};
  }
  sharding sharding_mode() const { return sharding_; }
  // set_sharded_updates(on): set_sharding(on ? sharding::on : sharding::off)
  void set_sharded_updates(bool on) { set_sharding(on ? sharding::on : sharding::off); }
  // sharded_updates(i): the choice for variable i's updates: under on, whether its rule is
  // shardable; under measured, for a variable without replicas the same, else whether its
  // timed updates chose sharding (false until the choice, at its 7th update, whatever the
  // trial updates before it do)
  bool sharded_updates(std::size_t i) const {
    const trial& t = trials_.at(i);
    const auto& s = *slots_.at(i);
    return s.shardable() &&
           (sharding_ == sharding::on ||
            (sharding_ == sharding::measured && (!s.replicated() || (t.decided && t.shard))));
  }

  // check_state_over(comm, who): throws meshpp::error "<who>: ..." if a variable's state is in
  // shares and the ranks of its mesh are not those of comm (complete_state() over comm's ranks
  // would wait for others). No communication; what save() checks before completing.
  void check_state_over(MPI_Comm comm, const std::string& who) const {
    for (const auto& s : slots_) {
      if (!s->state_in_shares() && !s->state_sharded()) continue;
      int result = MPI_UNEQUAL;
      detail::checked(MPI_Comm_compare(s->mesh_world(), comm, &result), "MPI_Comm_compare");
      // the same ranks, in any order: the completion runs over the variables' own groups
      if (result == MPI_IDENT || result == MPI_CONGRUENT || result == MPI_SIMILAR) continue;
      throw error(who + ": the optimizer state of variable '" + s->name() +
                  "' is in shares over the ranks of its mesh (sharded updates), which are not "
                  "the ranks of this save's mesh: save with the variables' mesh, or call the "
                  "optimizer's complete_state() on every rank of it first");
    }
  }

  // zero_grad(): clears every variable's gradient without updating
  void zero_grad() {
    for (const auto& s : slots_) s->clear_grad();
  }

  // state_bytes(): the bytes of optimizer state this rank holds now (under shard_level::state,
  // about 1/p of the unsharded figure for variables with p replicas)
  std::size_t state_bytes() const {
    std::size_t n = 0;
    for (const auto& s : slots_) n += s->state_bytes();
    return n;
  }

  // steps(): the number of step() calls so far
  std::int64_t steps() const { return steps_; }
  // size(): the number of variables
  std::size_t size() const { return slots_.size(); }

  // learning_rate(): the rate the next step will use; set_learning_rate(r): from now on, r
  virtual double learning_rate() const = 0;
  virtual void set_learning_rate(double rate) = 0;

  // For checkpoints (io/checkpoint.hpp), which walk the state with a state_visitor:
  // visit_state(v): the kind, the hyperparameters and the step count
  void visit_state(state_visitor& v) {
    visit_options(v);
    v.integer("steps", steps_);
  }
  // variable_node(i), variable_name(i): variable i's identity and name, in the order added
  const detail::node_base* variable_node(std::size_t i) const { return slots_.at(i)->node(); }
  const std::string& variable_name(std::size_t i) const { return slots_.at(i)->name(); }
  // variable i's gradient, for what reads or rescales every gradient before a step
  // (clip_grad_norm, optim/clip.hpp): has_grad(i); grad_squares(i): this rank's part of the
  // sum of its squares over the mesh (the local slice's on the first of its replicas, 0 on the
  // others: summed over every rank of the mesh, each element counts once; no communication);
  // scale_grad(i, f): its local slice times f; variable_mesh(i): the variable's mesh
  bool has_grad(std::size_t i) const { return slots_.at(i)->has_grad(); }
  double grad_squares(std::size_t i) const { return slots_.at(i)->gradient_squares(); }
  void scale_grad(std::size_t i, double factor) { slots_.at(i)->scale_gradient(factor); }
  const mesh_base& variable_mesh(std::size_t i) const { return slots_.at(i)->grad_mesh(); }
  // visit_slot(i, v): variable i's state (moments, buffers, its count of updates). No
  // communication: a visitor that saves needs the state whole, so while sharded updates leave
  // it in shares this throws meshpp::error (on every rank alike) until complete_state() has
  // run, as save() runs it first.
  void visit_slot(std::size_t i, state_visitor& v) {
    if (v.what() == state_visitor::mode::save && slots_.at(i)->state_in_shares()) {
      throw error("meshpp::optimizer: the state of variable '" + slots_.at(i)->name() +
                  "' is current only in this rank's share (sharded updates): call the "
                  "optimizer's complete_state() on every rank before reading it whole");
    }
    slots_.at(i)->visit_state(v);
    if (v.what() == state_visitor::mode::load) slots_.at(i)->state_replaced();
  }
  // complete_state(): every variable's state whole on every rank, where sharded updates left
  // it in shares (see optimizer_slot::apply). Collective: save() calls it on every rank.
  void complete_state() {
    for (const auto& s : slots_) {
      if (!s->state_in_shares()) continue;
      const auto phase = s->mesh_counters().phase("checkpoint");
      s->complete_state();
    }
  }

 protected:
  optimizer() = default;

  // visit_options(v): the kind and the hyperparameters; by default an error (an optimizer that
  // does not name its hyperparameters cannot be saved)
  virtual void visit_options(state_visitor&) {
    throw error(
        "meshpp::checkpoint: this optimizer does not save its hyperparameters (it does not "
        "override visit_options)");
  }

  // adopt(slot): adds a variable's slot. Throws meshpp::error if the variable is already there.
  void adopt(std::unique_ptr<detail::slot_base> s) {
    for (const auto& other : slots_) {
      if (other->node() == s->node()) {
        throw error("meshpp::optimizer::add(variables...): variable '" + s->name() +
                    "' was added twice");
      }
    }
    s->set_shard(shard_);
    slots_.push_back(std::move(s));
    trials_.emplace_back();
  }

 private:
  // a variable's updates so far and, under sharding::measured, their timing
  struct trial {
    static constexpr int timed_each = 2;  // updates timed sharded, then as many whole
    int updates = 0;
    double whole = std::numeric_limits<double>::infinity(), shared = whole;  // fastest, s
    bool decided = false, shard = false;
  };

  // how_to_update(s, t): whether this update of s shards, and whether it is timed (under
  // measured, a trial update on a mesh that runs); at the first update after the timed ones,
  // the agreement (collective over the variable's mesh: every rank updates the same variables
  // the same number of times)
  struct update_way {
    bool shard, timed;
  };
  update_way how_to_update(const detail::slot_base& s, trial& t) {
    if (s.state_sharded()) return {true, false};  // the state is a share: so is the update
    if (sharding_ == sharding::off || !s.shardable()) return {false, false};
    // nothing to share (no replicas): as under on, with nothing to time
    if (sharding_ == sharding::on || !s.replicated()) return {true, false};
    if (t.decided) return {t.shard, false};
    constexpr int k = trial::timed_each;
    // 0: sharded, untimed (the state is made); 1..k: sharded; k + 1: whole, untimed (it
    // completes the state first, and leaves m and v fresh in cache); k + 2..2k + 1: whole
    if (t.updates <= 2 * k + 1)
      return {t.updates <= k, t.updates != 0 && t.updates != k + 1 && !s.planning()};
    t.decided = true;
    if (s.planning()) {  // a plan times nothing: it prices the update sharded
      t.shard = true;
      return {true, false};
    }
    std::array<double, 2> times{t.whole, t.shared};
    detail::checked(
        MPI_Allreduce(MPI_IN_PLACE, times.data(), 2, MPI_DOUBLE, MPI_MAX, s.mesh_world()),
        "MPI_Allreduce");
    t.shard = times[1] < times[0];
    return {t.shard, false};
  }

  // check_shardable(level, who): throws meshpp::error "meshpp::optimizer::<who>: ..." if level
  // is not built, or cannot apply to these variables (the same on every rank)
  void check_shardable(shard_level level, const std::string& who) const {
    if (level == shard_level::none) return;
    const std::string at = "meshpp::optimizer::" + who + ": ";
    if (level > shard_level::gradients)
      throw error(at +
                  "shard level 3 (parameters) is not built; levels 1 (state) and 2 "
                  "(gradients) are");
    bool any = false;
    for (const auto& s : slots_) {
      if (!s->has_replica_dims()) continue;
      any = true;
      if (!s->elementwise())
        throw error(at + "the state of variable '" + s->name() +
                    "' cannot be sharded: this optimizer's rule is not element-wise (Adafactor's "
                    "statistics are means over rows and columns); use shard level 0");
    }
    if (!any && !slots_.empty())
      throw error(at +
                  "no variable has a mesh dim to shard its state over (each is split over "
                  "every mesh dim: a model-parallel layout); shard level 1 needs a data-parallel "
                  "dim, or use level 0");
  }

  std::vector<std::unique_ptr<detail::slot_base>> slots_;
  std::vector<trial> trials_;  // one a slot, in the same order
  std::int64_t steps_ = 0;
  sharding sharding_ = sharding::measured;
  shard_level shard_ = shard_level::none;
};

/// @brief An optimizer whose rule is Slot and whose hyperparameters are Options. Slots share
/// the options with the optimizer, so set_learning_rate() reaches them, moves included.
/// @tparam Options  an aggregate of hyperparameters
/// @tparam Slot     template <class Tensor, class Options> class, derived from
///                  optimizer_slot<Tensor>, constructible from (variable<Tensor>,
///                  std::shared_ptr<const Options>)
template <class Options, template <class, class> class Slot>
class basic_optimizer : public optimizer {
 public:
  using options_type = Options;

  // add(parts...): trains these variables too (any tensor types), or every variable of these
  // layers or models (autodiff/parameters.hpp: a model's layers(), a layer's variables())
  template <class... Parts>
  void add(const Parts&... parts) {
    // If this fails, an argument is a plain tensor or a traced value: only variables are
    // trained (wrap the initial value: mp::variable w(tensor, "w")).
    static_assert(
        (... && (is_model_part_v<Parts> || offending::optimizer_argument_is_not_a_variable<Parts>)),
        "meshpp::optimizer::add(parts...): each argument must be a meshpp::variable, "
        "or a layer or model of them");
    if constexpr ((... && is_model_part_v<Parts>)) {
      (for_each_variable(parts, [&](const auto& v) { add_one(v); }), ...);
    }
  }

  // options(): the hyperparameters in use
  const Options& options() const { return *options_; }

 protected:
  explicit basic_optimizer(Options o) : options_(std::make_shared<Options>(std::move(o))) {}
  Options& mutable_options() { return *options_; }

  // the hyperparameters through visit_hyperparameters(v, options), found by ADL beside Options
  void visit_options(state_visitor& v) override {
    if constexpr (requires { visit_hyperparameters(v, *options_); }) {
      visit_hyperparameters(v, *options_);
    } else {
      optimizer::visit_options(v);
    }
  }

 private:
  template <class Tensor>
  void add_one(const variable<Tensor>& v) {
    static_assert(std::is_floating_point_v<typename Tensor::value_type> ||
                      offending::variable_values_are_not_floating_point<Tensor>,
                  "meshpp::optimizer::add(variables...): a variable must hold floating-point "
                  "values");
    adopt(std::make_unique<Slot<Tensor, Options>>(v, options_));
  }

  std::shared_ptr<Options> options_;
};

}  // namespace meshpp
