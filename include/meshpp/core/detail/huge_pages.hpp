// meshpp/core/detail/huge_pages.hpp — detail: asking Linux to back large buffers with 2 MiB
// pages before they are first written.
//
// A buffer of many MiB freshly allocated (a tensor's slice, a collective's staging buffer)
// is mapped page by page as it is first written: one page fault per 4 KiB. Under a hypervisor
// a fault is costly: on the Debian 12 VMs meshpp is measured on, writing 64 MiB of fresh
// memory took 190 ms with 4 KiB pages and 12 ms with 2 MiB pages (memset after malloc), and
// an allgather relayout of a 4096 x 4096 float matrix over 2 ranks spent most of its 650 ms
// in faults. Where transparent huge pages are enabled for "madvise" (Debian's default), the
// kernel maps a region in 2 MiB pages only if asked; advise_huge_pages asks, for the whole
// 2 MiB pages inside [p, p + bytes), before anything touches them.
//
// It is advice, and the values are the same either way: a kernel without transparent huge
// pages ignores it; pages already touched stay small until the kernel's khugepaged may merge
// them in the background. Its cost: where the kernel's defrag setting is "madvise" (Debian's
// default), a fault in an advised region with no free 2 MiB page at hand compacts memory
// first, which can stall on a machine whose memory is fragmented. Off with
// -DMESHPP_HUGE_PAGES=0, defined alike for every translation unit of a program (a target's
// compile definitions: this function is inline, and must be the same everywhere).
#pragma once

#include <cstddef>
#include <cstdint>

#ifndef MESHPP_HUGE_PAGES
#define MESHPP_HUGE_PAGES 1
#endif

#if MESHPP_HUGE_PAGES && defined(__linux__)
#include <sys/mman.h>
#endif

namespace meshpp::detail {

// Buffers smaller than this are left alone. Below 32 MiB, malloc (as mp::environment sets it,
// core/environment.hpp) serves a buffer from its heap and reuses that memory for the next
// one, so a training step's temporaries are faulted in once, not every step; advised, they
// made the Transformer's step (bench/transformer, 8 MiB attention scores) 17-22% slower here,
// in user time, not in faults (cache conflicts of power-of-two strides in 2 MiB pages may be a
// cause; not run down). From 32 MiB up, glibc's malloc left alone maps every buffer afresh;
// as mp::environment sets it (no block mapped on its own), those come from the heap too, are
// faulted in once, and the advice covers the heap pages they take: smaller temporaries that
// later reuse those pages sit in 2 MiB pages too (not measured: the Transformer's step has no
// block of 32 MiB).
inline constexpr std::size_t huge_page_threshold = std::size_t{32} << 20;

// advise_huge_pages(p, bytes): see the top of this file
inline void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#if MESHPP_HUGE_PAGES && defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < huge_page_threshold) return;
  constexpr std::size_t page = std::size_t{2} << 20;
  // the whole pages inside: from the first page boundary at or after p
  const std::size_t skip = (page - reinterpret_cast<std::uintptr_t>(p) % page) % page;
  const std::size_t length = bytes > skip ? (bytes - skip) / page * page : 0;
  // Advice only: where it fails (no transparent huge pages), the small pages serve as before.
  if (length > 0) (void)::madvise(static_cast<char*>(p) + skip, length, MADV_HUGEPAGE);
#endif
}

}  // namespace meshpp::detail
