// meshpp/ops/detail/embedding_ids.hpp — what ids a lookup accepts (gather, one_hot, the
// labels of softmax_cross_entropy): integers, each in [0, size of the looked-up dim); one that
// is not throws meshpp::error on every rank, before any communication of the operation.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "meshpp/core/agree.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp::detail {

// is_id_type_v<T>: T can hold ids: an integer type, not bool or a character type
template <class T>
inline constexpr bool is_id_type_v =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
    !std::is_same_v<T, char32_t>;

// "[batch:3, seq:1]": a global index of the dims of S
template <class S, std::size_t N>
std::string index_text(const std::array<std::size_t, N>& index) {
  constexpr auto names = dim_names_v<S>;
  std::string out = "[";
  for (std::size_t i = 0; i < N; ++i) append(out, i ? ", " : "", names[i], ':', index[i]);
  return out + "]";
}

// check_ids<Dim>(what, ids, size): every id of this rank's slice is in [0, size), or throws
// meshpp::error on every rank: the ranks agree over the world (one allreduce of one int),
// since split ids differ between ranks, and replicated ones can too, by mistake (labels
// computed or read per rank): a rank that alone threw would leave the others waiting in the
// lookup's collective.
template <class Dim, class Ids>
void check_ids(std::string_view what, const Ids& ids, std::size_t size) {
  if (ids.mesh().planning()) return;  // a plan's ids have no values
  using S = typename Ids::shape_type;
  const auto& local = ids.local();
  std::string problem;
  const auto* data = local.data();
  for (std::size_t j = 0; j < local.size(); ++j) {
    const auto v = data[j];
    if (std::cmp_greater_equal(v, 0) && std::cmp_less(v, size)) continue;
    std::array<std::size_t, S::rank> at{};
    std::size_t rest = j;
    for (std::size_t i = S::rank; i-- > 0;) {
      at[i] = ids.local_offsets()[i] + rest % local.shape()[i];
      rest /= local.shape()[i];
    }
    using wide = std::conditional_t<std::is_signed_v<std::remove_const_t<decltype(v)>>, long long,
                                    unsigned long long>;
    append(problem, what, ": id ", static_cast<wide>(v), " at ids", index_text<S>(at),
           " is outside [0, ", size, "), the range of dim '", Dim::name(), "'");
    break;
  }
  agree_or_throw(ids.mesh().world(), problem);
}

}  // namespace meshpp::detail
