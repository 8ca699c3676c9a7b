// meshpp/nn/embedding.hpp — an embedding layer: a trainable table[Vocab, Model...] looked up
// by integer ids.
//
//   mp::embedding<float, vocab, mp::shape<d_model>, mesh_t> embed(mesh, sizes, /*seed*/ 3);
//   auto x = embed(ids);         // ids[batch, seq] (integers) -> traced [batch, seq, d_model]
//   auto xs = embed.apply<mp::layout<mp::split<batch, all>>>(ids);  // -> [batch/all, ...]
//   mp::add_variables(optimizer, embed);
//
// The table starts normal(0, 1 / sqrt(d)), d the product of Model's sizes (so a looked-up
// vector has about unit norm), generated from the global index: the same bit for bit under
// every layout and rank count. The lookup is the traced take<Vocab>(table, ids) of
// autodiff/embedding.hpp, with its communication:
//   forward   [vocab/cols, d_model] x ids[batch/rows, seq] |-> [batch/rows, seq, d_model]
//             a local lookup in this rank's stripe of vocab, then allreduce over cols (none
//             when vocab is whole); apply<OutRules>: reduce_scatter over cols where OutRules
//             split a result dim over it
//   backward  g[batch/rows, seq, d_model] |-> d table [vocab/cols, d_model]
//             a local scatter-add, then allreduce over rows (ids' mesh dims): dense, the
//             table's slice, whatever the batch size
// ids must be whole along the mesh dim Vocab is split over (a compile error otherwise).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "meshpp/autodiff/embedding.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp {

/// @brief An embedding layer: out[Ids..., Model...] = table[ids[Ids...], Model...], the table
/// a trainable variable.
/// @tparam T     element type of the table (float, double)
/// @tparam Vocab the dim looked up (the ids are indices along it)
/// @tparam Model shape<...>: the dims of one embedding vector
/// @tparam Mesh  the mesh; the table is laid out by its rules
template <class T, class Vocab, class Model, class Mesh>
class embedding {
  static_assert(is_shape_v<Model>,
                "meshpp::embedding<T, Vocab, Model, Mesh>: Model must be a shape<...>");
  static_assert(!contains_v<Model, Vocab>,
                "meshpp::embedding<T, Vocab, Model, Mesh>: Model must not contain Vocab");

 public:
  using value_type = T;
  using table_type = tensor_of<T, shape_concat_t<shape<Vocab>, Model>, Mesh>;

  // embedding(mesh, sizes, seed, name = "embedding"): the table normal(0, 1 / sqrt(d)) from
  // seed; sizes must give Vocab and every dim of Model
  template <class... E>
  embedding(const Mesh& m, const extents<E...>& sizes, std::uint64_t seed,
            std::string name = "embedding")
      : table_(random_normal<table_type>(m, sizes, seed, T(0), initial_stddev(sizes)),
               name + "/table") {}

  // layer(ids): ids[Ids...] (a plain integer tensor or expression) -> traced [Ids..., Model...]
  template <class Ids>
  auto operator()(const Ids& ids) const {
    return apply<void>(ids);
  }

  // apply<OutRules>(ids): the same, the result laid out by OutRules (void: as above; else
  // take<Vocab, OutRules>: a reduce_scatter where a result dim takes the mesh dim Vocab is
  // split over, e.g. a residual stream split over batch under a vocab-split table)
  template <class OutRules, class Ids>
  auto apply(const Ids& ids) const {
    if constexpr (std::is_void_v<OutRules>)
      return take<Vocab>(table_, ids);
    else
      return take<Vocab, OutRules>(table_, ids);
  }

  // initial_stddev(sizes): 1 / sqrt(d), d the number of elements of one embedding vector
  template <class... E>
  static T initial_stddev(const extents<E...>& sizes) {
    const auto d = static_cast<double>(detail::element_count(sizes.template sizes_of<Model>()));
    return static_cast<T>(1.0 / std::sqrt(d));
  }

  // table(): the variable (a handle: copies share the value and the gradient)
  const variable<table_type>& table() const { return table_; }
  variable<table_type>& table() { return table_; }

  // variables(): (table)
  std::tuple<variable<table_type>> variables() const { return {table_}; }

 private:
  variable<table_type> table_;
};

}  // namespace meshpp
