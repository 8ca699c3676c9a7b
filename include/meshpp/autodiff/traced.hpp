// meshpp/autodiff/traced.hpp — the gradient graph: traced tensors, variables, and the node
// every differentiable operation records.
//
//   mp::variable w(mp::random_normal<float, io, hidden>(mesh, sizes, 1), "w");   // trainable
//   auto x = mp::trace(inputs);                  // a tensor whose gradient we want, not trained
//   auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, w));   // computed and recorded
//
// Define-by-run: an operation with a traced operand computes its value at once (the same plan
// and the same communication as on plain tensors) and records a node holding that value, its
// operands' nodes, and how to send a gradient back to them (autodiff/gradients.hpp runs that
// backwards). Plain tensors, expressions and scalars may be mixed in: they are constants of
// the graph. Only operations that lead back to a variable or a trace()d tensor keep their
// backward step; the rest are values alone.
//
// A gradient is computed by named operations too, so its communication follows from the
// layouts exactly as the forward pass's does. Before it reaches an operand it is conformed to
// the operand's type (conform<Tensor>(g)):
//   [batch/rows, hidden] |-> [hidden]         dims the operand lacks (it was broadcast over
//                                             them) are summed out: allreduce over rows
//                                             (deferred, below)
//   [hidden/cols] |-> [hidden]                a split the operand lacks: allgather over cols
//   [hidden] |-> [hidden/cols]                a split the operand has: local slice, free
//   [io, hidden] |-> [hidden, io]             transposed by name, free
//
// Deferred sums. An einsum contracting a dim split over mesh dims M ends with an allreduce
// over M, and so does a broadcast dim split over M summed out of a gradient. In a gradient,
// that allreduce is left pending: the receiving node keeps its gradient as partial sums over
// M (node_base::pending), later contributions are added to them locally, and the sum across
// ranks runs once, when the gradient is complete and read (propagate(), or the bucket of a
// variable, comm/buckets.hpp). So the q, k and v projections' gradients into the attention
// input, or the branches of a residual, cost one allreduce, not one each. A contribution that
// is whole on every rank joins partial sums on the group's first member alone (mesh::leads).
// Partial sums may move to the node's layout over other mesh dims (each rank keeps its place
// in the sum's group); they are summed at once only where the node's layout splits a dim over
// a mesh dim of the sum, by one reduce_scatter that leaves each rank its stripe (the adjoint
// of the allgather that made a whole tensor of a split one: a branch's input gathered from a
// split residual stream), and a node holding partial sums over one group that receives them
// over another completes the first. Rename, reshape and relayout pass them through; every
// other backward step receives its gradient complete.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/comm/buckets.hpp"
#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/reduce_scatter_sums.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp {

namespace detail {

// the error of reading a gradient the optimizer holds in shares (variable::grad)
[[noreturn]] MESHPP_KERNEL inline void gradient_in_shares(const std::string& name) {
  throw error("meshpp::variable::grad(): the gradient of variable '" + name +
              "' is summed in shares over its replicas (shard_level::gradients: each rank "
              "summed only the share it updates); the optimizer's step() reads it. To read "
              "gradients whole, use shard level 0 or 1");
}

/// One value of the gradient graph, of any tensor type.
struct node_base {
  virtual ~node_base() = default;
  // the nodes this one was computed from (only kept while it needs a gradient)
  std::vector<std::shared_ptr<node_base>> inputs;
  // a variable or a trace()d tensor, or computed from one: gradients may flow through here
  bool requires_grad = false;
  bool is_variable = false;
  // during one gradient pass: a requested gradient lies behind this node
  bool wanted = false;
  bool is_target = false;
  // during one gradient pass: the consumers that have yet to send their gradient here
  int waiting = 0;
  // the gradient holds partial sums over these mesh dims (a bit set), not yet combined across
  // ranks: what einsums that contract a split dim, and broadcasts summed out, send (see
  // "Deferred sums" at the top of this file)
  unsigned pending = 0;
  // the bucket whose allreduce completes the gradient (backward() of a variable)
  std::shared_ptr<allreduce_bucket> in_flight;
  // shard_level::gradients (optim/optimizer.hpp): a variable's partial sums over exactly these
  // (its replica) mesh dims are reduce-scattered instead, each member of the group summing its
  // share of the local slice alone (the optimizer's shares, core/divides.hpp shard_counts);
  // grad_in_shares then says that only that share of the gradient is summed
  unsigned scatter_over = 0;
  bool grad_in_shares = false;

  virtual bool has_grad() const = 0;
  // sends this node's gradient to its wanted inputs
  virtual void propagate() = 0;
  virtual void clear_grad() = 0;
  // settle(): completes the gradient: waits for its bucket, or sums the pending partial sums
  // now (collective over their group)
  virtual void settle() = 0;
  // enqueue(q): hands a gradient of pending partial sums to a bucket of q
  virtual void enqueue(bucket_queue& q) = 0;
};

// readable_as_v<Tensor, G>: G (a tensor or expression) has Tensor's dims and can be read
// into Tensor's layout with no communication (every split of G is one of Tensor's)
template <class Tensor, class G>
inline constexpr bool readable_as_v =
    same_dims_v<typename G::shape_type, typename Tensor::shape_type>&& assignable_layout<
        typename Tensor::layout_type, typename G::layout_type, typename G::shape_type>::value;
template <class Tensor, class G>
inline constexpr bool adds_in_place_v = false;
template <class Tensor, class G>
requires requires { typename G::shape_type; }
inline constexpr bool adds_in_place_v<Tensor, G> = readable_as_v<Tensor, G>;

// scatterable_mask<Tensor, G>(rules): the mesh dims of those of Tensor's rules (split<d, m>)
// that partial sums held as G can be reduce-scattered over into Tensor's layout: G holds d
// whole and splits nothing over m (node::scatter_partial)
template <class Tensor, class G, class... Rules>
constexpr unsigned scatterable_mask(layout<Rules...>*) {
  unsigned bits = 0;
  (((!is_split_in_v<typename G::layout_type, typename Rules::tensor_dim> &&
     (G::split_mask() & Tensor::mesh_type::template mask_v<typename Rules::mesh_dim>) == 0)
        ? (bits |= Tensor::mesh_type::template mask_v<typename Rules::mesh_dim>)
        : 0u),
   ...);
  return bits;
}
template <class Tensor, class G>
constexpr unsigned scatterable_mask() {
  return scatterable_mask<Tensor, G>(static_cast<typename Tensor::layout_type*>(nullptr));
}

// conform<Tensor>(g): the gradient g (a tensor or expression over a superset of Tensor's dims)
// as a Tensor: broadcast dims summed out, laid out as Tensor, transposed by name.
template <class Tensor, class G>
Tensor conform(G&& g);

/// A value of type Tensor in the graph, its gradient while a pass runs, and its backward step.
template <class Tensor>
struct node final : node_base {
  using tensor_type = Tensor;
  using shape_type = typename Tensor::shape_type;
  Tensor value;
  std::optional<Tensor> grad;
  // backward(value, grad): sends grad to the inputs (each accumulates what it receives)
  std::function<void(const Tensor&, const Tensor&)> backward;
  // backward_pending(grad, mask), for linear steps that move nothing over mesh dims a pending
  // sum runs over (rename, reshape, relayout): sends a gradient of partial sums over mask on
  // as such and returns true, or returns false (then the sum is completed and backward runs)
  std::function<bool(const Tensor&, unsigned)> backward_pending;

  explicit node(Tensor v) : value(std::move(v)) {}
  ~node() override { release(); }
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  bool has_grad() const override { return grad.has_value(); }
  void propagate() override {
    if (!backward || !grad) return;  // a leaf: its gradient stays as it is (maybe in a bucket)
    if (pending && backward_pending && backward_pending(*grad, pending)) return;
    settle();
    backward(value, *grad);
  }
  void clear_grad() override {
    release();
    grad.reset();
    pending = 0;
    grad_in_shares = false;
  }
  void settle() override {
    finish_in_flight();
    if (pending) {
      const auto scope = value.mesh().counters().operation([] {
        return operation_descriptor{"deferred partial sums " + to_string(shape_type{}),
                                    operation_kind::gradient_sums,
                                    {},
                                    {},
                                    false};
      });
      allreduce_sum(value.mesh(), pending, std::span(grad->local().data(), grad->local().size()));
      pending = 0;
    }
  }
  void enqueue(bucket_queue& q) override {
    if (!grad || !pending) return;
    if constexpr (std::is_floating_point_v<typename Tensor::value_type>) {
      if (scatter_over != 0 && pending == scatter_over) {
        scatter_sums();
        return;
      }
    }
    in_flight = q.add(value.mesh(), pending, std::span(grad->local().data(), grad->local().size()));
    pending = 0;
  }
  // scatter_sums(): the partial sums over scatter_over reduce-scattered, each member's share
  // of the local slice summed into place (one reduce_scatter over the group, at once)
  void scatter_sums() {
    using T = typename Tensor::value_type;
    const auto& m = value.mesh();
    const auto scope = m.counters().operation([] {
      return operation_descriptor{"gradient shares " + to_string(shape_type{}),
                                  operation_kind::gradient_sums,
                                  {},
                                  {},
                                  false};
    });
    auto& local = grad->local();
    const auto p = static_cast<std::size_t>(m.group_size(scatter_over));
    const auto counts = shard_counts(local.size(), p);
    const auto mine =
        shard_of(local.size(), p, static_cast<std::size_t>(m.group_rank(scatter_over)));
    std::vector<T> share(mine.end - mine.begin);
    reduce_scatter_blocks_over<T>(m, scatter_over, std::span<const T>(local.data(), local.size()),
                                  std::span<T>(share), std::span<const std::size_t>(counts),
                                  MPI_SUM, true);
    std::copy(share.begin(), share.end(), local.data() + mine.begin);
    pending = 0;
    grad_in_shares = true;
  }

  // accumulate(g): adds the gradient contribution g (conformed to Tensor) to grad; a later
  // contribution that needs no reduction or communication is added in place, in one pass. Dims
  // of g that Tensor lacks (it was broadcast over them) are summed out locally and their sums
  // over ranks left pending.
  template <class G>
  void accumulate(G&& g) {
    using GT = std::remove_cvref_t<G>;
    using GS = typename GT::shape_type;
    static_assert(contains_all_v<GS, shape_type>,
                  "meshpp: a gradient lacks a dim of the tensor it is sent to");
    if constexpr (!same_dims_v<GS, shape_type>) {
      using summed = shape_difference_t<GS, shape_type>;
      constexpr unsigned mask =
          mesh_mask_v<typename GT::mesh_type, split_mesh_dims_t<typename GT::layout_type, summed>>;
      value.mesh().counters().streamed([&] { return as_expression(g).bytes_read(); });
      accumulate_partial(reduce_local<op::sum, shape_type>(as_expression(g)), mask);
    } else {
      finish_in_flight();
      if (pending) {
        // grad holds partial sums: a whole contribution joins them on the group's first member
        const bool lead = value.mesh().leads(pending);
        if constexpr (adds_in_place_v<Tensor, GT>) {
          if (lead) *grad = *grad + g;
        } else {
          Tensor c = conform<Tensor>(std::forward<G>(g));  // may communicate: every rank
          if (lead) *grad = *grad + c;
        }
        return;
      }
      if constexpr (adds_in_place_v<Tensor, GT>) {
        if (grad) {
          *grad = *grad + g;
          return;
        }
      }
      Tensor c = conform<Tensor>(std::forward<G>(g));
      if (grad)
        *grad = *grad + c;
      else
        grad.emplace(std::move(c));
    }
  }

  // accumulate_partial(p, mask): adds p, whose values are partial sums over the mesh dims in
  // mask (the sum over the group's members is the contribution), leaving the sum pending
  // unless Tensor is split over one of those mesh dims (a slice of partial sums along a dim
  // their group splits would add different stripes): then it is reduce-scattered into
  // Tensor's layout (scatter_partial). p itself must not be split over them. Reaching
  // Tensor's layout otherwise moves data over other mesh dims only, among ranks of the same
  // place in the group: their values stay partial sums over it.
  template <class P>
  void accumulate_partial(P&& p, unsigned mask) {
    using PT = std::remove_cvref_t<P>;
    finish_in_flight();
    if ((mask & PT::split_mask()) != 0) {
      // no sum can complete stripes that differ from member to member: a caller's mistake
      throw error(
          "meshpp: internal error: partial sums split over a mesh dim they are partial "
          "over reached a gradient");
    }
    if ((mask & Tensor::split_mask()) != 0) {
      scatter_partial(std::forward<P>(p), mask,
                      static_cast<typename Tensor::layout_type*>(nullptr));
      return;
    }
    if (mask == 0) {
      accumulate(std::forward<P>(p));
      return;
    }
    if (grad && pending != 0 && pending != mask) settle();  // sums over another group first
    if (!grad) {
      grad.emplace(conform<Tensor>(std::forward<P>(p)));
    } else if (pending == mask) {
      if constexpr (adds_in_place_v<Tensor, PT>)
        *grad = *grad + p;
      else
        *grad = *grad + conform<Tensor>(std::forward<P>(p));
    } else {
      // grad is whole on every member: it joins the partial sums on the group's first one
      Tensor c = conform<Tensor>(std::forward<P>(p));
      if (value.mesh().leads(mask)) c = c + *grad;
      grad = std::move(c);
    }
    pending = mask;
  }

 private:
  // scatter_partial(p, mask, rules): partial sums over mask reaching a Tensor split over some
  // of mask's mesh dims. For each rule split<d, m> of Tensor with m in mask and d whole in p,
  // one reduce_scatter over m completes the sums and leaves each member its stripe of d:
  //   [d, ...] partial over m |-> [d/m, ...]     (the adjoint of an allgather)
  // What of mask Tensor still splits after those (d split in p over another mesh dim) is
  // allreduced; the rest of mask stays pending.
  template <class P>
  void scatter_partial(P&& p, unsigned mask, layout<>*) {
    using PT = std::remove_cvref_t<P>;
    const unsigned split = mask & Tensor::split_mask();
    if (split == 0) {
      accumulate_partial(std::forward<P>(p), mask);
      return;
    }
    PT whole(std::forward<P>(p));  // a copy only when p is const
    {
      const auto scope = whole.mesh().counters().operation(
          [] { return "partial sums " + to_string(typename PT::shape_type{}); });
      allreduce_sum(whole.mesh(), split, std::span(whole.local().data(), whole.local().size()));
    }
    accumulate_partial(std::move(whole), mask & ~split);
  }
  template <class P, class R, class... Rest>
  void scatter_partial(P&& p, unsigned mask, layout<R, Rest...>*) {
    using PT = std::remove_cvref_t<P>;
    if constexpr ((scatterable_mask<Tensor, PT>(static_cast<layout<R>*>(nullptr)) != 0)) {
      constexpr unsigned bit = PT::mesh_type::template mask_v<typename R::mesh_dim>;
      if ((mask & bit) != 0) {
        auto y = [&] {  // the operation's scope holds the reduce_scatter alone
          const auto scope = p.mesh().counters().operation(
              [] { return "partial sums " + to_string(typename PT::shape_type{}); });
          return reduce_scatter_along<R>(p);
        }();
        scatter_partial(std::move(y), mask & ~bit, static_cast<layout<Rest...>*>(nullptr));
        return;
      }
    }
    scatter_partial(std::forward<P>(p), mask, static_cast<layout<Rest...>*>(nullptr));
  }

  // finish_in_flight(): waits for the bucket completing grad (a second backward() before the
  // optimizer's step adds to a gradient still being summed)
  void finish_in_flight() {
    if (!in_flight) return;
    in_flight->wait();  // on an error the link stays: a later wait reports it again
    in_flight.reset();
  }
  // release(): grad is about to go: a bucket holding it must no longer read or write it
  void release() {
    if (!in_flight) return;
    auto b = std::move(in_flight);
    if (grad) b->forget(grad->local().data());
  }
};

}  // namespace detail

/// @brief A tensor on the gradient graph: its value, and the node that records how it was
/// computed. Copies share the node. Operations on it (autodiff/*.hpp) are recorded.
/// @tparam Tensor a meshpp::tensor type
template <class Tensor>
class traced {
  static_assert(is_tensor_v<Tensor>, "meshpp::traced<Tensor>: Tensor must be a meshpp::tensor");

 public:
  using tensor_type = Tensor;
  using value_type = typename Tensor::value_type;
  using shape_type = typename Tensor::shape_type;
  using layout_type = typename Tensor::layout_type;
  using mesh_type = typename Tensor::mesh_type;

  explicit traced(std::shared_ptr<detail::node<Tensor>> n) : node_(std::move(n)) {}

  // value(): the computed tensor
  const Tensor& value() const { return node_->value; }
  const mesh_type& mesh() const { return node_->value.mesh(); }
  auto sizes() const { return node_->value.sizes(); }
  template <class D>
  std::size_t extent() const {
    return node_->value.template extent<D>();
  }
  // requires_grad(): gradients can flow back through this value
  bool requires_grad() const { return node_->requires_grad; }
  // item(): the value of a tensor of no dims (the same on every rank)
  value_type item() const requires(shape_type::rank == 0) { return node_->value.item(); }

  const std::shared_ptr<detail::node<Tensor>>& node() const { return node_; }

 protected:
  std::shared_ptr<detail::node<Tensor>> node_;
};

/// @brief A trainable tensor: a leaf of the graph that keeps its value between steps and
/// accumulates the gradients backward(loss) computes for it (optimizers read and clear them).
/// Its initial value comes from any tensor; meshpp's creation functions (random_normal, ...)
/// generate from the global index, so it is the same under every layout.
template <class Tensor>
class variable : public traced<Tensor> {
 public:
  explicit variable(Tensor initial, std::string name = "")
      : traced<Tensor>(std::make_shared<detail::node<Tensor>>(std::move(initial))),
        name_(std::make_shared<std::string>(std::move(name))) {
    this->node_->requires_grad = true;
    this->node_->is_variable = true;
  }

  using traced<Tensor>::value;
  // value(): the current value, for an optimizer to update in place
  Tensor& value() { return this->node_->value; }
  // grad(): the accumulated gradient (empty before backward() reached this variable). After
  // backward() it may wait for the bucket still summing it across ranks (an MPI_Wait that
  // every rank started: reading it on one rank alone is fine, it completes once the others
  // reach any MPI call). Hold no reference to it across backward(): the bucket writes there.
  const std::optional<Tensor>& grad() const {
    check_whole();
    this->node_->settle();
    return this->node_->grad;
  }
  std::optional<Tensor>& grad() {
    check_whole();
    this->node_->settle();
    return this->node_->grad;
  }
  void zero_grad() { this->node_->clear_grad(); }
  const std::string& name() const { return *name_; }

 private:
  // check_whole(): throws meshpp::error if the gradient is held in shares (every rank alike)
  void check_whole() const {
    if (this->node_->grad_in_shares) detail::gradient_in_shares(name());
  }
  std::shared_ptr<std::string> name_;
};

// trace(t): t as a leaf whose gradient gradients() can be asked for (not trained)
template <class Tensor>
requires is_tensor_v<Tensor> traced<Tensor> trace(Tensor t) {
  auto n = std::make_shared<detail::node<Tensor>>(std::move(t));
  n->requires_grad = true;
  return traced<Tensor>(std::move(n));
}

// is_traced_v<X>: X is a traced tensor (or a variable)
template <class X>
inline constexpr bool is_traced_v = false;
template <class Tensor>
inline constexpr bool is_traced_v<traced<Tensor>> = true;
template <class Tensor>
inline constexpr bool is_traced_v<variable<Tensor>> = true;

namespace detail {
// the number of no_grad scopes open on this thread
inline int& no_grad_depth() {
  thread_local int depth = 0;
  return depth;
}
}  // namespace detail

// grad_enabled(): operations on traced tensors are recorded for gradients (no no_grad scope is
// open on this thread)
inline bool grad_enabled() { return detail::no_grad_depth() == 0; }

/// @brief A scope in which nothing is recorded for gradients: operations on traced tensors and
/// variables compute their values exactly as outside (same plan, same communication) but keep
/// no backward step and no reference to their inputs, so evaluation and generation cost no
/// memory for a graph. Scopes nest; each is local to its thread.
///
///   { mp::no_grad scope; auto logits = model(x); ... }   // logits: traced, requires_grad() false
class no_grad {
 public:
  no_grad() { ++detail::no_grad_depth(); }
  ~no_grad() { --detail::no_grad_depth(); }
  no_grad(const no_grad&) = delete;
  no_grad& operator=(const no_grad&) = delete;
};

// stop_gradient(x): x's value as a constant of the graph: a traced tensor or variable gives its
// plain value (no copy for a named x; gradients do not flow back through it), a plain tensor
// itself
template <class X>
requires is_traced_v<X> || is_tensor_v<X>
const auto& stop_gradient(const X& x) {
  if constexpr (is_traced_v<X>)
    return x.value();
  else
    return x;
}
// stop_gradient(temporary): the value by value, so that `const auto& v = stop_gradient(f(x));`
// does not keep a reference into a temporary that dies with the statement
namespace detail {
// a temporary traced tensor or tensor (stop_gradient's by-value overload)
template <class X>
concept temporary_value = !std::is_reference_v<X> &&
                          (is_traced_v<std::remove_cv_t<X>> || is_tensor_v<std::remove_cv_t<X>>);
}  // namespace detail

template <class X>
auto stop_gradient(X&& x) requires detail::temporary_value<X> {
  if constexpr (is_traced_v<std::remove_cv_t<X>>)
    return std::remove_cvref_t<decltype(x.value())>(x.value());
  else
    return std::remove_cv_t<X>(std::forward<X>(x));
}

namespace detail {

template <class X>
inline constexpr bool is_traced_operand_v = is_traced_v<std::remove_cvref_t<X>>;

// traced_or_tensor<X>: a traced tensor (or variable) or a plain tensor
template <class X>
concept traced_or_tensor = is_traced_v<X> || is_tensor_v<X>;

// pass_pending(y, input, step): lets y's gradient, when it holds partial sums, reach input as
// step(g), still partial, instead of being summed across ranks first. For a step that is
// linear and local to the mesh dims of the sum: y's layout and the step's result split nothing
// over them (then step moves data over other mesh dims only, if at all). Where the input's
// layout splits over them, accumulate_partial reduce-scatters the sums into it.
template <class Y, class A, class Step>
void pass_pending(const traced<Y>& y, const std::shared_ptr<node<A>>& input, Step step) {
  if (!y.node()->requires_grad) return;
  // the step's own result is laid out by the mesh's rules, which may split where neither y
  // nor the input does: a partial sum must not be sliced along a mesh dim it is partial over
  using R = std::remove_cvref_t<std::invoke_result_t<Step, const Y&>>;
  // where the input splits over a mesh dim of the sum, the step's result must be one that
  // can be reduce-scattered into it, else y's gradient is summed in place first (no copy)
  constexpr unsigned unscatterable = A::split_mask() & ~scatterable_mask<A, R>();
  y.node()->backward_pending = [input, step](const Y& g, unsigned mask) {
    if ((mask & (Y::split_mask() | R::split_mask() | unscatterable)) != 0) return false;
    if (input->wanted) input->accumulate_partial(step(g), mask);
    return true;
  };
}

// send(input, g): accumulates g into the input's gradient if the pass wants it there
template <class N, class G>
void send(const std::shared_ptr<N>& input, G&& g) {
  if (input && input->wanted) input->accumulate(std::forward<G>(g));
}

struct keep_first {
  template <class A, class B>
  A operator()(A a, B) const {
    return a;
  }
};

// broadcast_like(g, like): g (a tensor over a subset of like's dims) repeated over like's
// other dims, as an expression over like's dims (no communication)
template <class G, class Like>
auto broadcast_like(const G& g, const Like& like) {
  return make_function(keep_first{}, g, like);
}

template <class Tensor, class G>
Tensor conform(G&& g) {
  using GT = std::remove_cvref_t<G>;
  using GS = typename GT::shape_type;
  using S = typename Tensor::shape_type;
  static_assert(contains_all_v<GS, S>,
                "meshpp::conform<Tensor>(g): the gradient lacks a dim of the operand");
  if constexpr (std::is_same_v<GT, Tensor>) {
    return Tensor(std::forward<G>(g));
  } else if constexpr (!same_dims_v<GS, S>) {
    // the operand was broadcast over the dims it lacks: their gradients add up
    return conform<Tensor>(reduce_sum_to<S>(g));
  } else if constexpr (readable_as_v<Tensor, GT>) {
    return Tensor(g);  // one pass: transpose by name and/or free slice
  } else if constexpr (!is_tensor_v<GT>) {
    return conform<Tensor>(eval(g));
  } else {
    return Tensor(relayout<typename Tensor::layout_type>(g));
  }
}

}  // namespace detail
}  // namespace meshpp
