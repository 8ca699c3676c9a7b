// tensor<T, Shape, Layout, Mesh>: the slice each rank holds under split and replicated
// layouts, the creation functions, and describe(). Runs at any rank count: the meshes are
// built from the communicator's size and every size below divides by 1, 2 and 4.
#include <meshpp/core/blocks.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/huge_pages.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/evaluate.hpp>  // tensor-to-tensor conversions
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>

#include <sys/mman.h>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(a);
MESHPP_DIM(b);
MESHPP_DIM(c);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using idx2 = std::array<std::size_t, 2>;
using idx3 = std::array<std::size_t, 3>;

namespace {
// Sizes divisible by every mesh dim size used at 1, 2 and 4 ranks.
const auto sizes = mp::extents{a{} = 8, b{} = 12, c{} = 4};

// The value generate() is given below, and its single-rank reference.
double code(const idx3& g) { return g[0] * 100.0 + g[1] * 10.0 + g[2]; }
template <class T>
xt::xtensor<T, 3> code_reference() {
  xt::xtensor<T, 3> ref({8, 12, 4});
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t j = 0; j < 12; ++j) {
      for (std::size_t k = 0; k < 4; ++k) ref(i, j, k) = static_cast<T>(code({i, j, k}));
    }
  }
  return ref;
}

// Leaves freed heap blocks of about `bytes` full of nonzero bytes, so memory that a tensor
// forgets to initialise is unlikely to read as zero by luck.
void dirty_the_heap(std::size_t bytes) {
  for (int round = 0; round < 4; ++round) {
    void* p = std::malloc(bytes);
    std::memset(p, 0x5a, bytes);
    std::free(p);
  }
}

// huge_page_advice(p, n): whether the kernel holds the advice MADV_HUGEPAGE (flag "hg" among
// its VmFlags in /proc/self/smaps) for the mapping that contains the middle of the n values at
// p (the advice covers the whole 2 MiB pages of a buffer, which always include its middle when
// it spans 4 MiB or more); false where no mapping or no VmFlags line is found
template <class T>
bool huge_page_advice(const T* p, std::size_t n) {
  const auto at = reinterpret_cast<std::uintptr_t>(p + n / 2);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    // a mapping's first line: "begin-end perms offset ..." in hex
    if (head >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > 12) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  return false;
}
}  // namespace

TEST_CASE_TEMPLATE("zeros, ones and full fill every element of the slice", T, double, int) {
  using rules = mp::layout<mp::split<a, rows>, mp::split<b, cols>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  mesh_t m(meshpp_test::grid2(world().size()));
  const std::size_t local_bytes = 8 * 12 * 4 * sizeof(T) / world().size();

  dirty_the_heap(local_bytes);
  const auto z = mp::zeros<T, a, b, c>(m, sizes);
  CHECK_ALL_RANKS(z.local().size() == local_bytes / sizeof(T));
  CHECK_ALL_RANKS(xt::all(xt::equal(z.local(), T(0))));
  CHECK(meshpp_test::bit_equal(mp::gather(z), xt::xtensor<T, 3>(xt::zeros<T>(idx3{8, 12, 4}))));

  dirty_the_heap(local_bytes);
  const auto t = mp::tensor_of<T, mp::shape<a, b, c>, mesh_t>(m, sizes);  // constructor: zeros
  CHECK_ALL_RANKS(xt::all(xt::equal(t.local(), T(0))));

  const auto o = mp::ones<T, c, a>(m, sizes);
  CHECK_ALL_RANKS(xt::all(xt::equal(o.local(), T(1))));
  CHECK(meshpp_test::bit_equal(mp::gather(o), xt::xtensor<T, 2>(xt::ones<T>(idx2{4, 8}))));

  const auto f = mp::full<T, b>(m, sizes, T(7));
  CHECK_ALL_RANKS(xt::all(xt::equal(f.local(), T(7))));
  CHECK_ALL_RANKS(f.local().size() == 12u / static_cast<std::size_t>(m.size<cols>()));

  // the explicit-type spellings
  using t3 = mp::tensor_of<T, mp::shape<a, b, c>, mesh_t>;
  CHECK_ALL_RANKS(xt::all(xt::equal(mp::full<t3>(m, sizes, T(-3)).local(), T(-3))));
  CHECK_ALL_RANKS(xt::all(xt::equal(mp::ones<t3>(m, sizes).local(), T(1))));
  dirty_the_heap(local_bytes);
  CHECK_ALL_RANKS(xt::all(xt::equal(mp::zeros<t3>(m, sizes).local(), T(0))));
}

TEST_CASE_TEMPLATE("generate computes each element from its global index", T, double, int) {
  const auto ref = code_reference<T>();
  const int n = world().size();
  auto check = [&](const auto& mesh) {
    const auto t = mp::generate<T, a, b, c>(mesh, sizes, [](const idx3& g) { return code(g); });
    // the slice is the reference's block at the slice's offsets
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        t.local(), meshpp_test::block(ref, t.local_offsets(), t.local_shape())));
    CHECK(meshpp_test::bit_equal(mp::gather(t), ref));
  };
  SUBCASE("replicated") { check(mp::mesh<mp::axes<all>>({n})); }
  SUBCASE("split over a 1-D mesh") {
    check(mp::mesh<mp::axes<all>, mp::layout<mp::split<b, all>>>({n}));
  }
  SUBCASE("split over both dims of a 2-D mesh") {
    check(mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<c, rows>, mp::split<a, cols>>>(
        meshpp_test::grid2(n)));
  }
  SUBCASE("one dim split, the other mesh dim replicating") {
    check(mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<b, cols>>>({1, n}));
    check(mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<b, rows>>>({n, 1}));
  }
  // generate on a 2-D tensor: the index has the tensor's own dim order
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<a, all>>>;
  const auto t =
      mp::generate<T, c, a>(mesh_t({n}), sizes, [](const idx2& g) { return g[0] * 10 + g[1]; });
  xt::xtensor<T, 2> ref2({4, 8});
  for (std::size_t k = 0; k < 4; ++k) {
    for (std::size_t i = 0; i < 8; ++i) ref2(k, i) = static_cast<T>(k * 10 + i);
  }
  CHECK(meshpp_test::bit_equal(mp::gather(t), ref2));
}

TEST_CASE("local_shape and local_offsets on a 1-D mesh") {
  const int n = world().size();
  const std::size_t r = static_cast<std::size_t>(world().rank());
  const std::size_t nn = static_cast<std::size_t>(n);
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<a, all>>>;
  mesh_t m({n});

  const mp::tensor_of<double, mp::shape<a, b>, mesh_t> split_first(m, sizes);
  CHECK(split_first.local_shape() == idx2{8 / nn, 12});
  CHECK_ALL_RANKS(split_first.local_offsets() == idx2{r * 8 / nn, 0});
  CHECK_ALL_RANKS(split_first.local_offset<a>() == r * 8 / nn);
  CHECK(split_first.local_offset<b>() == 0);

  const mp::tensor_of<double, mp::shape<b, a>, mesh_t> split_second(m, sizes);
  CHECK(split_second.local_shape() == idx2{12, 8 / nn});
  CHECK_ALL_RANKS(split_second.local_offsets() == idx2{0, r * 8 / nn});

  const mp::tensor_of<double, mp::shape<b, c>, mesh_t> replicated(m, sizes);  // no rule for b, c
  CHECK(replicated.local_shape() == idx2{12, 4});
  CHECK(replicated.local_offsets() == idx2{0, 0});
  CHECK(replicated.split_mask() == 0u);
  CHECK(split_first.split_mask() == 1u);

  // every element is held by exactly one rank: the slices tile the tensor
  std::size_t held = split_first.local().size();
  std::size_t total = 0;
  boost::mpi::all_reduce(world(), held, total, std::plus<std::size_t>());
  CHECK(total == 8u * 12u);
}

TEST_CASE("local_shape and local_offsets on a 2-D mesh") {
  const auto g = meshpp_test::grid2(world().size());
  using mesh_t = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<a, rows>, mp::split<b, cols>>>;
  mesh_t m(g);
  const std::size_t R = g[0], C = g[1];
  const std::size_t r = static_cast<std::size_t>(world().rank()) / C;  // row-major mesh
  const std::size_t col = static_cast<std::size_t>(world().rank()) % C;

  const mp::tensor_of<float, mp::shape<a, b, c>, mesh_t> both(m, sizes);
  CHECK(both.local_shape() == idx3{8 / R, 12 / C, 4});
  CHECK_ALL_RANKS(both.local_offsets() == idx3{r * 8 / R, col * 12 / C, 0});
  CHECK(both.split_mask() == 3u);

  const mp::tensor_of<float, mp::shape<c, b>, mesh_t> cols_only(m, sizes);
  CHECK(cols_only.local_shape() == idx2{4, 12 / C});
  CHECK_ALL_RANKS(cols_only.local_offsets() == idx2{0, col * 12 / C});
  CHECK(cols_only.split_mask() == 2u);

  const mp::tensor_of<float, mp::shape<c>, mesh_t> replicated(m, sizes);
  CHECK(replicated.local_shape() == std::array<std::size_t, 1>{4});
  CHECK(replicated.local_offsets() == std::array<std::size_t, 1>{0});
}

TEST_CASE("an explicit layout instead of the mesh's rules") {
  const auto g = meshpp_test::grid2(world().size());
  using rules = mp::layout<mp::split<a, rows>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  mesh_t m(g);
  const std::size_t R = g[0], C = g[1];
  const std::size_t r = static_cast<std::size_t>(world().rank()) / C;
  const std::size_t col = static_cast<std::size_t>(world().rank()) % C;

  // tensor_of derives the layout from the rules
  static_assert(std::is_same_v<mp::tensor_of<int, mp::shape<b, a>, mesh_t>,
                               mp::tensor<int, mp::shape<b, a>, rules, mesh_t>>);
  static_assert(std::is_same_v<mp::tensor_of<int, mp::shape<b, c>, mesh_t>,
                               mp::tensor<int, mp::shape<b, c>, mp::layout<>, mesh_t>>);

  // a layout of its own: b over rows, a over cols
  using own =
      mp::tensor<int, mp::shape<a, b>, mp::layout<mp::split<a, cols>, mp::split<b, rows>>, mesh_t>;
  const own t(m, sizes);
  CHECK(t.local_shape() == idx2{8 / C, 12 / R});
  CHECK_ALL_RANKS(t.local_offsets() == idx2{col * 8 / C, r * 12 / R});

  // the creation functions take the explicit type, and gather reassembles it
  const auto gen =
      mp::generate<own>(m, sizes, [](const idx2& i) { return int(i[0] * 100 + i[1]); });
  xt::xtensor<int, 2> ref({8, 12});
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t j = 0; j < 12; ++j) ref(i, j) = static_cast<int>(i * 100 + j);
  }
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      gen.local(), meshpp_test::block(ref, gen.local_offsets(), gen.local_shape())));
  CHECK(meshpp_test::bit_equal(mp::gather(gen), ref));

  // the replicated layout, explicitly, on the same mesh
  using whole = mp::tensor<int, mp::shape<a, b>, mp::layout<>, mesh_t>;
  const auto rep =
      mp::generate<whole>(m, sizes, [](const idx2& i) { return int(i[0] * 100 + i[1]); });
  CHECK(rep.local_shape() == idx2{8, 12});
  CHECK_ALL_RANKS(meshpp_test::bit_equal(rep.local(), ref));
}

TEST_CASE("extent, sizes and global_shape") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<b, all>>>;
  mesh_t m({world().size()});
  const auto t = mp::zeros<double, c, b>(m, mp::extents{a{} = 5, b{} = 12, c{} = 4});
  CHECK(t.extent<c>() == 4);
  CHECK(t.extent<b>() == 12);  // the global size, whatever the slice
  CHECK(t.global_shape() == idx2{4, 12});
  const auto s = t.sizes();
  static_assert(std::is_same_v<std::decay_t<decltype(s)>, mp::extents<c, b>>);
  CHECK(s.get<c>() == 4);
  CHECK(s.get<b>() == 12);
  CHECK(mp::to_string(s) == "[c:4, b:12]");
  // a tensor made from another's sizes has the same shape
  const auto u = mp::ones<double, b>(m, t.sizes());
  CHECK(u.global_shape() == std::array<std::size_t, 1>{12});
  CHECK(&t.mesh().world() == &m.world());
}

TEST_CASE("describe names the dims, sizes, layout, mesh and this rank's slice") {
  const auto g = meshpp_test::grid2(world().size());
  using mesh_t = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<a, rows>, mp::split<b, cols>>>;
  mesh_t m(g);
  const std::size_t R = g[0], C = g[1];
  const int rank = world().rank();
  const std::size_t r = static_cast<std::size_t>(rank) / C;
  const std::size_t col = static_cast<std::size_t>(rank) % C;
  auto s = [](std::size_t v) { return std::to_string(v); };

  const auto t = mp::zeros<double, a, b, c>(m, sizes);
  const std::string expected =
      "tensor<double> [a:8, b:12, c:4] layout a:rows;b:cols on mesh [rows:" + s(R) +
      ", cols:" + s(C) + "]\n  rank " + std::to_string(rank) + " at (" + s(r) + ", " + s(col) +
      ") holds [" + s(r * 8 / R) + ":" + s((r + 1) * 8 / R) + ", " + s(col * 12 / C) + ":" +
      s((col + 1) * 12 / C) + ", 0:4], local shape [" + s(8 / R) + ", " + s(12 / C) + ", 4]";
  CHECK_ALL_RANKS(t.describe() == expected);

  const auto rep = mp::zeros<int, c>(m, sizes);
  const std::string d = rep.describe();
  CHECK(d.find("tensor<int> [c:4]") == 0);
  CHECK(d.find("(replicated)") != std::string::npos);
  CHECK_ALL_RANKS(d.find("rank " + std::to_string(rank) + " at (") != std::string::npos);
  CHECK(d.find("holds [0:4], local shape [4]") != std::string::npos);
}

TEST_CASE("a dim of size 0 makes an empty tensor that gathers to an empty array") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<a, all>>>;
  mesh_t m({world().size()});
  const auto t =
      mp::generate<double, a, b>(m, mp::extents{a{} = 0, b{} = 3}, [](const idx2&) { return 1.0; });
  CHECK(t.local().size() == 0);
  const auto whole = mp::gather(t);
  CHECK(whole.shape()[0] == 0);
  CHECK(whole.shape()[1] == 3);
}

TEST_CASE("a tensor assigned to a tensor of another dim order or type transposes by name") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<a, all>>>;
  const mesh_t mesh({world().size()});
  const auto sizes = mp::extents{a{} = 4 * static_cast<std::size_t>(world().size()), b{} = 3};
  const auto x = mp::random_normal<float, a, b>(mesh, sizes, 9);
  mp::tensor_of<float, mp::shape<b, a>, mesh_t> t = x;  // construction
  mp::tensor_of<double, mp::shape<b, a>, mesh_t> u(mesh, sizes);
  u = x;  // assignment, converting the element type
  const auto gx = mp::gather(x);
  const auto gt = mp::gather(t);
  const auto gu = mp::gather(u);
  bool same = true;
  for (std::size_t i = 0; i < gx.shape()[0]; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      same = same && gt(j, i) == gx(i, j) && gu(j, i) == static_cast<double>(gx(i, j));
    }
  }
  CHECK_ALL_RANKS(same);
  CHECK(mesh.counters().total(mp::collective::alltoall).calls == 0);  // no communication
  // the three gathers (a group of one rank counts nothing)
  CHECK(mesh.counters().total(mp::collective::allgather).calls == (world().size() > 1 ? 3 : 0));
}

// A large slice, scratch buffer or staging buffer asks for 2 MiB pages before its first write
// (core/detail/huge_pages.hpp): what is checked is the kernel's record of the advice, not
// whether it found free huge pages. The test programs make no mp::environment (their main is
// Boost.MPI's), so malloc keeps glibc's defaults: each buffer, larger than 32 MiB, is a mapping
// of its own, made for it, and advice it carries is its own call site's, not left on reused
// memory by an earlier buffer (under mp::environment such blocks come from the heap).
// Where the kernel has no transparent huge pages, madvise refuses and there is nothing to
// check; built with MESHPP_HUGE_PAGES=0, nothing is advised.
TEST_CASE("large slices and buffers are advised to use huge pages; small ones are not") {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled") || !MESHPP_HUGE_PAGES) {
    MESSAGE("no transparent huge pages, or MESHPP_HUGE_PAGES=0: advice not checked");
    return;
  }
  using mesh_t = mp::mesh<mp::axes<all>>;
  const mesh_t mesh({world().size()});
  // 4096 x 2304 floats, replicated: 36 MiB on every rank
  const auto big = mp::full<float, a, b>(mesh, mp::extents{a{} = 4096, b{} = 2304}, 1.5f);
  CHECK(huge_page_advice(big.local().data(), big.local().size()));
  CHECK(big.local()(4095, 2303) == 1.5f);
  // an evaluated expression's result: the uninitialized constructor
  const auto twice = mp::eval(big * 2.0f);
  CHECK(huge_page_advice(twice.local().data(), twice.local().size()));
  CHECK(twice.local()(0, 0) == 3.0f);
  const std::size_t n = std::size_t{9} << 19;  // 36 MiB of doubles
  mp::detail::scratch<double> buffer(n);
  CHECK(huge_page_advice(buffer.data(), n));
  struct staging_use {};
  CHECK(huge_page_advice(mp::detail::staging<double, staging_use>(n), n));
  // below the 32 MiB threshold, nothing, though the range holds whole 2 MiB pages: 32 MiB less
  // one small page from a 2 MiB boundary, in a mapping made for it
  constexpr std::size_t huge = std::size_t{2} << 20;
  const std::size_t mapped = 17 * huge;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  char* boundary =
      static_cast<char*>(p) + (huge - reinterpret_cast<std::uintptr_t>(p) % huge) % huge;
  const std::size_t small = 16 * huge - 4096;
  mp::detail::advise_huge_pages(boundary, small);
  CHECK_FALSE(huge_page_advice(boundary, small));
  ::munmap(p, mapped);
}
