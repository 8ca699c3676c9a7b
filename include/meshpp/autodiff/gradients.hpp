// meshpp/autodiff/gradients.hpp — reverse-mode gradients of a recorded computation.
//
//   auto [dw1, dw2] = gradients(loss, w1, w2);   // d loss / d w, each laid out as its w
//   auto [dx, dw]   = vjp(y, dy, x, w);          // dy^T (d y / d x): y need not be a scalar
//   backward(loss);                              // adds d loss / d v into every variable v's
//                                                // grad() (what optimizers read)
//
// The pass visits the nodes between the loss and the requested tensors once each, latest
// first, and runs each node's recorded backward step, which is made of named operations (see
// autodiff/traced.hpp): its communication is what the layouts imply, nothing more. Nodes that
// lead to no requested tensor are skipped, so asking for d loss / d w alone computes no
// gradient for the inputs. A requested tensor the loss does not depend on gets zeros.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/comm/buckets.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

namespace offending {
template <class LossShape>
inline constexpr bool loss_is_not_a_scalar = LossShape::rank == 0;
template <class X>
inline constexpr bool gradient_asked_of_a_plain_value = false;
}  // namespace offending

namespace detail {
// every_x_traced_v<X...>: each x is a traced tensor or a variable
template <class... X>
inline constexpr bool every_x_traced_v = (is_traced_v<std::remove_cvref_t<X>> && ...);
}  // namespace detail

namespace detail {

// The default bucket of backward(): 4 MiB (PyTorch DDP's default is 25 MiB for networks a
// hundred times larger; a bucket this size fills a few times per Transformer step here, so the
// first ones overlap the rest of backward)
inline constexpr std::size_t default_bucket_bytes = std::size_t{4} << 20;

// topological_order(root): every node root depends on, inputs before the nodes computed
// from them (iterative: graphs of long training steps are deep)
inline std::vector<node_base*> topological_order(node_base* root) {
  std::vector<node_base*> order;
  std::unordered_set<node_base*> seen;
  std::vector<std::pair<node_base*, std::size_t>> stack{{root, 0}};
  seen.insert(root);
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->inputs.size()) {
      node_base* in = n->inputs[next++].get();
      if (seen.insert(in).second) stack.emplace_back(in, 0);
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

// run_backward(root, seed, variables_are_targets, bucket_bytes): the pass itself. Targets are
// the nodes marked is_target beforehand, and every variable when variables_are_targets;
// afterwards every node's gradient is cleared except the targets'. A target leaf whose
// gradient is complete (every consumer has sent its part) and holds partial sums goes into a
// bucket of its group (comm/buckets.hpp) at once, so its allreduce runs while the pass goes
// on; the buckets still open at the end start then. Targets may be in flight on return. A pass
// that throws clears the gradients of every node it visited, targets included.
template <class L>
void run_backward(node<L>& root, L seed, bool variables_are_targets, std::size_t bucket_bytes) {
  const auto phase = seed.mesh().counters().phase(std::string(counters::backward_phase));
  auto order = topological_order(&root);
  for (node_base* n : order) {
    if (variables_are_targets) n->is_target = n->is_variable;
    n->wanted = n->is_target || std::any_of(n->inputs.begin(), n->inputs.end(),
                                            [](const auto& in) { return in->wanted; });
    n->waiting = 0;
  }
  for (node_base* n : order) {
    if (!n->wanted) continue;
    for (const auto& in : n->inputs) in->waiting += in->wanted ? 1 : 0;
  }
  auto end_pass = [&] {
    for (node_base* n : order) {
      n->wanted = false;
      n->is_target = false;
      n->waiting = 0;
    }
  };
  bucket_queue buckets(bucket_bytes);
  try {
    if (root.wanted) root.accumulate(std::move(seed));
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      node_base* n = *it;
      if (!n->wanted) continue;
      if (n->has_grad()) {
        n->propagate();
        if (!n->is_target) n->clear_grad();  // free it as soon as it has been sent on
      }
      for (const auto& in : n->inputs) {
        if (in->wanted && --in->waiting == 0 && in->is_target && in->inputs.empty())
          in->enqueue(buckets);
      }
      buckets.poll();
    }
    buckets.flush();
  } catch (...) {
    // The gradients this pass was computing are incomplete: every node of the pass drops its
    // gradient (the targets' too), so none is read later (reading one would start a sum that
    // other ranks may never join), and the unstarted buckets go unstarted.
    for (node_base* n : order) {
      if (n->wanted) n->clear_grad();
    }
    end_pass();
    throw;
  }
  end_pass();
}

template <class X>
using tensor_type_of = typename std::remove_cvref_t<X>::tensor_type;

// grads_for(root, seed, xs...): d root / d x for each x, seeded with `seed`; leaves the
// gradients that variables have accumulated as they were
template <class L, class... X>
std::tuple<tensor_type_of<X>...> grads_for(node<L>& root, L seed, const X&... xs) {
  // Each x gets its own result slot, so one tensor asked for twice is a mistake: the same on
  // every rank, so every rank throws before the pass communicates.
  const std::array<const node_base*, sizeof...(X)> nodes{xs.node().get()...};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (nodes[i] == nodes[j]) {
        throw error("meshpp::gradients(loss, xs...): xs " + std::to_string(j + 1) + " and " +
                    std::to_string(i + 1) + " are the same tensor; ask for it once");
      }
    }
  }
  // a variable's accumulated gradient is set aside for the pass, then put back
  (xs.node()->settle(), ...);
  std::tuple<std::optional<tensor_type_of<X>>...> saved{std::move(xs.node()->grad)...};
  (xs.node()->grad.reset(), ...);
  (void(xs.node()->is_target = true), ...);
  run_backward(root, std::move(seed), false, default_bucket_bytes);
  (void(xs.node()->is_target = false), ...);  // also those the loss does not reach
  auto take = [](const auto& x, auto& keep) {
    auto& n = *x.node();
    n.settle();
    using T = tensor_type_of<decltype(x)>;
    T g = n.grad ? std::move(*n.grad) : T(n.value.mesh(), n.value.sizes());
    n.grad = std::move(keep);
    return g;
  };
  return std::apply([&](auto&... keep) { return std::tuple{take(xs, keep)...}; }, saved);
}

}  // namespace detail

// gradients(loss, xs...): the gradient of the scalar loss with respect to each x (a traced
// tensor or a variable), each laid out as its x, as a std::tuple
template <class L, class... X>
auto gradients(const traced<L>& loss, const X&... xs) {
  // If this fails, the loss has dims: a gradient needs one number to differentiate. Reduce it
  // (reduce_sum, reduce_mean), or seed each element with vjp(y, dy, xs...).
  static_assert(offending::loss_is_not_a_scalar<typename L::shape_type>,
                "meshpp::gradients(loss, xs...): loss must be a scalar (a traced tensor of no "
                "dims); reduce it first, or use vjp(y, dy, xs...)");
  static_assert(
      detail::every_x_traced_v<X...> || (offending::gradient_asked_of_a_plain_value<X> && ...),
      "meshpp::gradients(loss, xs...): each x must be a traced tensor or a variable "
      "(trace() a plain tensor to ask for its gradient)");
  if constexpr (L::shape_type::rank == 0 && detail::every_x_traced_v<X...>) {
    return detail::grads_for(*loss.node(), detail::full_agreed<L>(loss.mesh(), loss.sizes(), 1),
                             xs...);
  }
}

// vjp(y, dy, xs...): dy^T (d y / d x) for each x: the gradients of reduce_sum(y * dy) without
// computing that sum. dy has y's dims (any order and layout).
template <class Y, class DY, class... X>
requires is_tensor_v<DY>
auto vjp(const traced<Y>& y, const DY& dy, const X&... xs) {
  static_assert(same_dims_v<typename DY::shape_type, typename Y::shape_type>,
                "meshpp::vjp(y, dy, xs...): dy must have the dims of y");
  static_assert(
      detail::every_x_traced_v<X...> || (offending::gradient_asked_of_a_plain_value<X> && ...),
      "meshpp::vjp(y, dy, xs...): each x must be a traced tensor or a variable "
      "(trace() a plain tensor to ask for its gradient)");
  if constexpr (same_dims_v<typename DY::shape_type, typename Y::shape_type> &&
                detail::every_x_traced_v<X...>) {
    return detail::grads_for(*y.node(), detail::conform<Y>(dy), xs...);
  }
}

/// @brief How backward() sums the gradients of variables across ranks.
struct backward_options {
  // A bucket of gradients that need the same sum starts its allreduce once it holds this many
  // bytes (the rest start when the pass ends); 0: each gradient is its own allreduce, started
  // as soon as it is complete.
  std::size_t bucket_bytes = detail::default_bucket_bytes;
};

// backward(loss, options): adds d loss / d v to the grad() of every variable v the loss
// depends on. The data-parallel sums of those gradients run in buckets, nonblocking, while the
// pass goes on; reading a grad() (or optimizer::step()) waits for its own bucket only.
template <class L>
void backward(const traced<L>& loss, const backward_options& options = {}) {
  static_assert(offending::loss_is_not_a_scalar<typename L::shape_type>,
                "meshpp::backward(loss): loss must be a scalar (a traced tensor of no dims); "
                "reduce it first");
  if constexpr (L::shape_type::rank == 0) {
    detail::run_backward(*loss.node(), detail::full_agreed<L>(loss.mesh(), loss.sizes(), 1), true,
                         options.bucket_bytes);
  }
}

}  // namespace meshpp
