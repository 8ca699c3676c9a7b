// meshpp/core/blocks.hpp — detail: copying boxes between row-major N-d arrays, and the
// buffers such copies go through.
//
// copy_box(src, src_shape, src_at, dst, dst_shape, dst_at, box) copies the box of extents
// `box` starting at index `src_at` of src to index `dst_at` of dst, one contiguous run at a
// time. Packing a block for a collective, unpacking received blocks, and taking a local stripe
// are all this one copy. It walks the box with for_each_row (core/traverse.hpp), so a
// run is as long as the layouts allow (trailing dims that the box spans whole in both arrays
// join the last dim's run) and the offsets of successive runs are stepped, not recomputed:
// short runs cost little more than their copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "meshpp/core/detail/huge_pages.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/traverse.hpp"

namespace meshpp::detail {

template <class T, std::size_t N>
void copy_box(const T* src, const std::array<std::size_t, N>& src_shape,
              const std::array<std::size_t, N>& src_at, T* dst,
              const std::array<std::size_t, N>& dst_shape, const std::array<std::size_t, N>& dst_at,
              const std::array<std::size_t, N>& box) {
  strided_cursor<const T*, N> from{src + linear_index(src_at, src_shape),
                                   row_major_strides<N>(src_shape)};
  strided_cursor<T*, N> to{dst + linear_index(dst_at, dst_shape), row_major_strides<N>(dst_shape)};
  auto both = group(from, to);
  for_each_row(box, both, [&](std::size_t n) { std::memcpy(to.ptr, from.ptr, n * sizeof(T)); });
}

/// Scratch memory for data about to be overwritten whole (packed blocks, received blocks):
/// unlike std::vector it does not zero what it allocates, which would be one more pass over
/// memory on every collective; a large one is asked for 2 MiB pages (detail/huge_pages.hpp).
template <class T>
class scratch {
 public:
  scratch() = default;
  explicit scratch(std::size_t n) : data_(allocate(n)), size_(n) {}
  void resize(std::size_t n) {
    if (n > size_) data_.reset(allocate(n));
    size_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  static T* allocate(std::size_t n) {
    if (n == 0) return nullptr;
    T* p = new T[n];
    advise_huge_pages(p, n * sizeof(T));
    return p;
  }
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
};

/// staging<T, Use>(n): this thread's buffer of at least n values for `Use`, kept from call to
/// call, for values packed for one piece of a collective or received before they are unpacked.
/// Kept, because a buffer allocated and freed on every call may go back to the system and be
/// faulted in again each time (relayouts in a loop measured up to 1.1x slower so). Callers
/// bound n (the buffer never shrinks) and use one Use type per buffer they need at once.
template <class T, class Use>
T* staging(std::size_t n) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "meshpp::detail::staging<T, Use>: T must be a trivial type (its values are "
                "copied in bytewise)");
  struct aligned_delete {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  thread_local std::unique_ptr<T[], aligned_delete> buffer;
  thread_local std::size_t size = 0;
  if (n > size) {
    buffer.reset();
    size = 0;
    buffer.reset(static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t{64})));
    size = n;
    advise_huge_pages(buffer.get(), n * sizeof(T));
  }
  return buffer.get();
}

}  // namespace meshpp::detail
