// meshpp/optim/clip.hpp — global-norm gradient clipping: the gradients of all an optimizer's
// variables scaled down together, so that their global L2 norm is at most max_norm.
//
//   mp::backward(loss);
//   const double norm = mp::clip_grad_norm(opt, 1.0);   // the norm before clipping
//   opt.step();
//
// Over the variables that have a gradient (the others are left out, as step() leaves them):
//   norm   = sqrt(sum over those variables and all their global elements of g^2)
//   factor = min(1, max_norm / (norm + eps))          eps = 1e-6 unless given
//   g     *= factor, for every such gradient, when factor < 1
// (torch.nn.utils.clip_grad_norm_'s rule; optax.clip_by_global_norm's without eps).
//
// Communication: one allreduce of one double (the sum of squares) over every mesh dim of the
// variables' mesh, in the operation "clip gradients" of the phase "optimizer". Each rank sums the
// squares of its local slices, but only where it is the first of a slice's replicas (coordinate 0
// along the mesh dims the variable is replicated over), so the sum over the mesh counts every
// global element once: a variable split over every mesh dim adds all its slices, a replicated
// one its slice on one rank of each group of replicas. Every rank then holds the same sum (the
// same allreduce result that makes the replicas' summed gradients agree), so every rank scales
// by the same factor and the replicas of a variable stay identical. On a mesh of one rank
// nothing is communicated or counted; with no gradient at all, neither (the norm is 0).
//
// Reading a gradient waits for its sum across ranks if that is still running (its bucket, or a
// node's deferred partial sums), as step() would.
//
// Collective: every rank of the mesh calls it with the same optimizer (its variables holding
// gradients alike). The variables with a gradient must share one mesh (one allreduce for all);
// variables on different meshes throw meshpp::error naming two of them, on every rank, before
// any communication: clip each mesh's variables through an optimizer of their own. max_norm not
// finite or <= 0, eps not finite or < 0, throw meshpp::error naming the value, on every rank,
// before any communication.
//
// A NaN or infinite gradient element makes the norm NaN or infinite: the gradients are then
// left as they are and that norm is returned (check it with std::isfinite to skip the step).
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include <mpi.h>

#include "meshpp/comm/allreduce.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

/// @brief Scales every gradient of opt's variables by min(1, max_norm / (norm + eps)), norm
/// their global L2 norm, and returns that norm (before scaling), the same on every rank.
/// Collective: one allreduce of one double over the variables' mesh (see the top of
/// optim/clip.hpp).
/// @param opt      the optimizer whose variables' gradients are clipped (before its step())
/// @param max_norm the largest norm let through: finite and > 0
/// @param eps      added to the norm in the factor: finite and >= 0
inline double clip_grad_norm(optimizer& opt, double max_norm, double eps = 1e-6) {
  detail::check_positive("clip_grad_norm", "max_norm", max_norm);
  detail::check_non_negative("clip_grad_norm", "eps", eps);
  // the one mesh of the variables with a gradient (the same verdict on every rank)
  const mesh_base* mesh = nullptr;
  std::size_t first = 0;
  for (std::size_t i = 0; i < opt.size(); ++i) {
    if (!opt.has_grad(i)) continue;
    if (mesh == nullptr) {
      mesh = &opt.variable_mesh(i);
      first = i;
    } else if (!(opt.variable_mesh(i) == *mesh)) {
      throw error("meshpp::clip_grad_norm: variables '" + opt.variable_name(first) + "' and '" +
                  opt.variable_name(i) +
                  "' live on different meshes (one allreduce sums the squares of all): clip "
                  "each mesh's variables through an optimizer of their own");
    }
  }
  if (mesh == nullptr) return 0;  // no gradient: nothing to clip, nothing communicated
  counters& c = mesh->counters();
  const auto phase = c.phase(std::string(counters::optimizer_phase));
  const auto scope = c.operation([] { return "clip gradients"; });
  double squares = 0;
  for (std::size_t i = 0; i < opt.size(); ++i) {
    if (opt.has_grad(i)) squares += opt.grad_squares(i);
  }
  const unsigned every_dim = (1u << mesh->ndims()) - 1;
  detail::allreduce_sum(*mesh, every_dim, std::span<double>(&squares, 1));
  const double norm = std::sqrt(squares);
  if (!std::isfinite(norm)) return norm;  // NaN or Inf: left as they are
  const double factor = max_norm / (norm + eps);
  if (factor < 1) {
    for (std::size_t i = 0; i < opt.size(); ++i) {
      if (opt.has_grad(i)) opt.scale_grad(i, factor);
    }
  }
  return norm;
}

}  // namespace meshpp
