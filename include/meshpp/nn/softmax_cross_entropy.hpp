// meshpp/nn/softmax_cross_entropy.hpp — softmax cross-entropy on logits with a named class
// dim, numerically stable, the class dim split or not.
//
//   auto loss = mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits, labels));
//   // logits: traced [batch, classes]; labels: integer tensor [batch] -> loss per example [batch]
//   // plain logits (evaluation) give a plain tensor, and record nothing
//
// Forward, per example: loss = log(sum_c exp(z_c - m)) + m - z_label, with m = max_c z_c (so
// no exp overflows), and z_label looked up as take<Classes>(z, labels) does:
//   [batch/rows, classes/cols] |-> [batch/rows]   max, sum and label pick: each a local pass,
//                                                 then an allreduce over cols (none when the
//                                                 class dim is whole)
// Backward: d loss / d z = g (softmax(z) - one_hot(label)): one local pass from z and the
// kept log-sum-exp per example, then g subtracted at each label in place (no one-hot tensor):
// no communication.
//
// Labels must lie in [0, number of classes): anything else throws meshpp::error on every rank
// before any communication (as gather does; the ranks agree on it, so labels bad on one rank
// only throw on all of them).
//
// Non-finite logits propagate per example, other examples are exact: a NaN logit makes its
// example's loss NaN; +Inf on a class other than the label gives +Inf (the label's
// probability is 0), +Inf on the label NaN (inf - inf); -Inf is a class of probability 0.
#pragma once

#include <memory>
#include <type_traits>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/embedding.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/softmax.hpp"

namespace meshpp {

namespace offending {
template <class Classes, class LogitsShape>
inline constexpr bool logits_lack_the_class_dim = false;
template <class LabelsShape, class ExpectedShape>
inline constexpr bool labels_must_have_the_logits_dims_but_the_class_dim = false;
}  // namespace offending

// The checks of softmax_cross_entropy<Classes>(logits, labels), logits of shape S; `ok` says
// whether they passed (the body compiles only then, so a failure gives one message)
#define MESHPP_SOFTMAX_XENT_CHECKS(S)                                                            \
  using per_example = shape_difference_t<S, shape<Classes>>;                                     \
  static_assert(offending::logits_lack_the_class_dim<Classes, S> || contains_v<S, Classes>,      \
                "meshpp::softmax_cross_entropy<Classes>(logits, labels): logits have no dim "    \
                "Classes");                                                                      \
  static_assert(                                                                                 \
      offending::labels_must_have_the_logits_dims_but_the_class_dim<typename Labels::shape_type, \
                                                                    per_example> ||              \
          same_dims_v<typename Labels::shape_type, per_example>,                                 \
      "meshpp::softmax_cross_entropy<Classes>(logits, labels): labels must have "                \
      "the dims of logits except Classes");                                                      \
  constexpr bool ok =                                                                            \
      contains_v<S, Classes> && same_dims_v<typename Labels::shape_type, per_example>

// softmax_cross_entropy<Classes>(logits, labels) of plain logits (a tensor or expression): the
// loss per example, a plain tensor of the labels' dims (for evaluation: nothing is recorded)
template <class Classes, class L, class Labels>
requires is_expression_v<L> && is_tensor_v<Labels>
auto softmax_cross_entropy(const L& logits, const Labels& labels) {
  MESHPP_SOFTMAX_XENT_CHECKS(typename L::shape_type);
  if constexpr (ok) {
    const auto& z = detail::materialized(logits);
    const auto picked = take<Classes>(z, labels);  // checks the labels first
    return eval(logsumexp<Classes>(z) - picked);
  }
}

// softmax_cross_entropy<Classes>(logits, labels): the cross-entropy of softmax over Classes of
// the traced logits against integer labels (logits' dims but Classes); a traced tensor of the
// labels' dims
template <class Classes, class L, class Labels>
requires is_tensor_v<Labels>
auto softmax_cross_entropy(const traced<L>& logits, const Labels& labels) {
  using S = typename L::shape_type;
  MESHPP_SOFTMAX_XENT_CHECKS(S);
  if constexpr (ok) {
    using T = typename L::value_type;
    const L& z = logits.value();
    // The label's logit: a lookup along Classes (ops/embedding.hpp), which checks the labels on
    // every rank before any collective, and materializes no one-hot tensor.
    const auto picked = take<Classes>(z, labels);  // checks the labels first
    auto lse = logsumexp<Classes>(z);              // per example: all the backward step keeps
    auto loss = eval(lse - picked);
    using Y = decltype(loss);
    return record(
        std::move(loss),
        [lse = std::move(lse), labels](const Y&, const Y& g, const auto& in) {
          if (!in.wants_grad()) return;
          // g softmax(z), then g subtracted at each label: the lookup's local pass, the other way
          auto dz = eval(g * exp(in.value() - lse));
          detail::for_each_lookup_row<Classes>(
              labels, dz, g, [](T& to, const T& from) { to -= from; }, [](auto) {});
          in.add_grad(std::move(dz));
        },
        logits);
  }
}

#undef MESHPP_SOFTMAX_XENT_CHECKS

}  // namespace meshpp
