// meshpp/core/blocks.hpp — detail: copying boxes between row-major N-d arrays.
//
// copy_box(src, src_shape, src_at, dst, dst_shape, dst_at, box) copies the box of extents
// `box` starting at index `src_at` of src to index `dst_at` of dst, one contiguous run at a
// time. Packing a block for a collective, unpacking received blocks, and taking a local stripe
// are all this one copy. A run is as long as the layouts allow: trailing dims that the box
// spans whole in both arrays join the last dim's run (a [2048, 512] box of a [2048, 1024]
// array is 2048 runs of 512 values; the same box of a [2048, 512] array is one run), and the
// offsets of successive runs are stepped, not recomputed, so short runs cost little more than
// their copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace meshpp::detail {

template <class T, std::size_t N>
void copy_box(const T* src, const std::array<std::size_t, N>& src_shape,
              const std::array<std::size_t, N>& src_at, T* dst,
              const std::array<std::size_t, N>& dst_shape, const std::array<std::size_t, N>& dst_at,
              const std::array<std::size_t, N>& box) {
  if constexpr (N == 0) {
    *dst = *src;
  } else {
    for (std::size_t e : box) {
      if (e == 0) return;
    }
    // strides of both arrays, and where the box starts in each
    std::array<std::size_t, N> src_stride{}, dst_stride{};
    src_stride[N - 1] = dst_stride[N - 1] = 1;
    for (std::size_t i = N - 1; i > 0; --i) {
      src_stride[i - 1] = src_stride[i] * src_shape[i];
      dst_stride[i - 1] = dst_stride[i] * dst_shape[i];
    }
    std::size_t s = 0, d = 0;
    for (std::size_t i = 0; i < N; ++i) {
      s += src_at[i] * src_stride[i];
      d += dst_at[i] * dst_stride[i];
    }
    // dims [inner, N) form one contiguous run in both arrays
    std::size_t inner = N - 1, run = box[N - 1];
    while (inner > 0 && box[inner] == src_shape[inner] && box[inner] == dst_shape[inner]) {
      --inner;
      run *= box[inner];
    }
    // odometer over the dims outside the run, stepping both offsets
    std::array<std::size_t, N> idx{};
    while (true) {
      std::memcpy(dst + d, src + s, run * sizeof(T));
      std::size_t i = inner;
      while (true) {
        if (i == 0) return;
        --i;
        s += src_stride[i];
        d += dst_stride[i];
        if (++idx[i] < box[i]) break;
        s -= src_stride[i] * box[i];
        d -= dst_stride[i] * box[i];
        idx[i] = 0;
      }
    }
  }
}

// element_count(shape): the product of the extents
template <std::size_t N>
std::size_t element_count(const std::array<std::size_t, N>& shape) {
  std::size_t n = 1;
  for (std::size_t e : shape) n *= e;
  return n;
}

/// Scratch memory for data about to be overwritten whole (packed blocks, received blocks):
/// unlike std::vector it does not zero what it allocates, which would be one more pass over
/// memory on every collective.
template <class T>
class scratch {
 public:
  scratch() = default;
  explicit scratch(std::size_t n) : data_(n ? new T[n] : nullptr), size_(n) {}
  void resize(std::size_t n) {
    if (n > size_) data_.reset(new T[n]);
    size_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
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
  }
  return buffer.get();
}

}  // namespace meshpp::detail
