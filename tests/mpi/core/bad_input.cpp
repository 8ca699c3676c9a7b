// Bad input, tried systematically (part 1: sizes, meshes, data movement, files, ranks that
// disagree). Each case is something a user could write. It gets either a meshpp::error naming
// the problem on EVERY rank, thrown before any communication (or after an agreement check
// that every rank makes: core/agree.hpp), with the ranks still in step afterwards, or a
// documented result, which the case checks against a reference computed here. Never a crash,
// a hang or a silent wrong answer. Part 2 (NaN/Inf, hyperparameters, optimizers, layers):
// bad_input_training.cpp.
//
// Run at 1, 2 and 4 ranks. A mesh dim of size >= 2 exists only at 2 ranks or more, so cases
// that need one (ranks that disagree) check the error there and the good outcome at 1 rank. A
// split that does not divide is no error (docs/concepts.md, "Uneven splits"): cases 1, 7 and 8
// check its documented result.
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/agree.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/io/idx.hpp>
#include <meshpp/io/text.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/embedding.hpp>
#include <meshpp/ops/reduce.hpp>
#include <meshpp/ops/relayout.hpp>
#include <meshpp/ops/reshape.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/ops/shift.hpp>
#include <meshpp/ops/slice.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/collectives/broadcast.hpp>
#include <xtensor/xbuilder.hpp>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::ranks_in_step;
using meshpp_test::throws_with;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(tokens);
MESHPP_DIM(vocab);
MESHPP_DIM(all);
MESHPP_DIM(x);
MESHPP_DIM(y);

namespace {

// A 1-D mesh of every rank; cols split over it.
using line_mesh = mp::mesh<mp::axes<all>, mp::layout<mp::split<cols, all>>>;
// The same mesh with nothing split: every tensor replicated.
using replicated_mesh = mp::mesh<mp::axes<all>, mp::layout<>>;

int n_ranks() { return world().size(); }
std::size_t nz() { return static_cast<std::size_t>(world().size()); }

// value(r, c): the element a test tensor holds at [r, c]
double value(std::size_t r, std::size_t c) { return static_cast<double>(r * 100 + c) + 0.5; }

template <class T, class Mesh>
auto matrix(const Mesh& m, std::size_t nr, std::size_t nc) {
  return mp::generate<T, rows, cols>(m, mp::extents{rows{} = nr, cols{} = nc},
                                     [](const auto& i) { return value(i[0], i[1]); });
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// An IDX file of unsigned bytes with these dims and `data_bytes` bytes of data (the right
// number is the product of dims)
std::vector<unsigned char> idx_bytes(const std::vector<std::uint32_t>& dims, std::size_t data_bytes,
                                     unsigned char type = 0x08) {
  std::vector<unsigned char> b{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(d >> s));
  }
  for (std::size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<unsigned char>(i % 10));
  return b;
}

std::string text_of(std::size_t characters, char first = 'a') {
  std::string s;
  for (std::size_t i = 0; i < characters; ++i) s += static_cast<char>(first + i % 7);
  return s;
}

}  // namespace

// --- sizes that do not divide, are zero or negative ------------------------------------------

TEST_CASE("1. full<>: a split size the mesh dim does not divide is a documented result") {
  // near-equal blocks (docs/concepts.md, "Uneven splits"): every element 1, each rank its block
  line_mesh m({n_ranks()});
  const auto sizes = mp::extents{rows{} = 2, cols{} = nz() + 1};
  const auto t = mp::full<double, rows, cols>(m, sizes, 1.0);
  const xt::xtensor<double, 2> ones = xt::ones<double>({std::size_t{2}, nz() + 1});
  CHECK_ALL_RANKS(mp::gather(t) == ones);
  CHECK_ALL_RANKS(t.local_shape()[1] ==
                  (world().rank() == 0 ? std::min<std::size_t>(2, nz() + 1) : 1));
  CHECK(ranks_in_step());
}

TEST_CASE("2. a negative size throws where the extents are made, naming dim and value") {
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [] {
        (void)mp::extents{rows{} = 3, cols{} = -2};
      },
      {"dim 'cols' was given the negative size -2"}));
  // through reshape's extents and a maker's, the same check
  line_mesh m({n_ranks()});
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::zeros<float, rows>(m, mp::extents{rows{} = -1}); }, {"'rows'", "-1"}));
  CHECK(ranks_in_step());
}

TEST_CASE("3. a dim of size 0 makes an empty tensor, split or not (documented: 0 divides)") {
  line_mesh m({n_ranks()});
  const auto t = mp::zeros<float, rows, cols>(m, mp::extents{rows{} = 3, cols{} = 0});
  const auto g = mp::gather(t);
  CHECK_ALL_RANKS(g.shape()[0] == 3 && g.shape()[1] == 0 && t.local().size() == 0);
  // element-wise work on it is fine too
  const auto u = mp::gather(mp::eval(t * 2.0f + 1.0f));
  CHECK_ALL_RANKS(u.size() == 0);
  CHECK(ranks_in_step());
}

TEST_CASE("4. einsum contracting a dim of size 0 gives zeros (an empty sum)") {
  line_mesh m({n_ranks()});
  const auto a = mp::ones<double, rows, cols>(m, mp::extents{rows{} = 3, cols{} = 0});
  const auto b = mp::ones<double, cols, batch>(m, mp::extents{cols{} = 0, batch{} = 2});
  const auto c = mp::gather(mp::einsum<mp::shape<rows, batch>>(a, b));
  bool ok = c.shape()[0] == 3 && c.shape()[1] == 2;
  for (double v : c) ok = ok && v == 0.0;
  CHECK_ALL_RANKS(ok);
  CHECK(ranks_in_step());
}

TEST_CASE("5. einsum inputs that disagree on a dim's size throw, naming the dim and sizes") {
  line_mesh m({n_ranks()});
  const auto a = mp::ones<double, rows, cols>(m, mp::extents{rows{} = 3, cols{} = 2 * nz()});
  const auto b = mp::ones<double, cols, batch>(m, mp::extents{cols{} = 4 * nz(), batch{} = 2});
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::einsum<mp::shape<rows, batch>>(a, b); },
      {"dim 'cols'", std::to_string(2 * nz()) + " and " + std::to_string(4 * nz())}));
  CHECK(ranks_in_step());
}

TEST_CASE("6. reshape to sizes whose product differs throws, naming both products") {
  line_mesh m({n_ranks()});
  const auto t = matrix<float>(m, 3, 2 * nz());
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::reshape<mp::shape<tokens>>(t, mp::extents{tokens{} = 6 * nz() + 1}); },
      {"meshpp::reshape", "total size " + std::to_string(6 * nz()),
       "total size " + std::to_string(6 * nz() + 1)}));
  CHECK(ranks_in_step());
}

TEST_CASE("7. reshape to a result the mesh's rules split unevenly: the reshaped values") {
  // batch:all; [rows n, cols n + 1], held whole, -> [tokens n, batch n + 1]: batch does not
  // divide by the n ranks at n >= 2, and is laid out in near-equal blocks
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t m({n_ranks()});
  const auto t = matrix<float>(m, nz(), nz() + 1);
  const auto y =
      mp::reshape<mp::shape<tokens, batch>>(t, mp::extents{tokens{} = nz(), batch{} = nz() + 1});
  CHECK_ALL_RANKS(mp::gather(y) == mp::gather(t));  // the same [n, n + 1] row-major values
  CHECK(ranks_in_step());
}

TEST_CASE("8. relayout to a layout whose mesh dim does not divide a size: the same values") {
  line_mesh m({n_ranks()});
  // rows of size n + 1 held whole; the new layout splits rows over all, unevenly at n >= 2
  const auto t = matrix<double>(m, nz() + 1, nz());
  const auto y = mp::relayout<mp::layout<mp::split<rows, all>>>(t);
  CHECK_ALL_RANKS(mp::gather(y) == mp::gather(t));
  CHECK_ALL_RANKS(y.local_shape()[0] == (world().rank() == 0 ? 2u : 1u));
  CHECK(ranks_in_step());
}

TEST_CASE("9. reduce_sum, reduce_max, reduce_min over a dim of size 0: 0, -inf, +inf") {
  line_mesh m({n_ranks()});
  const auto t = mp::zeros<double, rows, cols>(m, mp::extents{rows{} = 0, cols{} = 2 * nz()});
  const auto s = mp::gather(mp::reduce_sum<rows>(t));
  const auto hi = mp::gather(mp::reduce_max<rows>(t));
  const auto lo = mp::gather(mp::reduce_min<rows>(t));
  const double inf = std::numeric_limits<double>::infinity();
  bool ok = s.size() == 2 * nz() && hi.size() == s.size() && lo.size() == s.size();
  for (std::size_t i = 0; ok && i < s.size(); ++i) ok = s(i) == 0 && hi(i) == -inf && lo(i) == inf;
  CHECK_ALL_RANKS(ok);
  // integers have no infinity: the lowest and the highest value
  const auto ti = mp::zeros<int, rows, cols>(m, mp::extents{rows{} = 0, cols{} = nz()});
  const auto hi_i = mp::gather(mp::reduce_max<rows>(ti));
  CHECK_ALL_RANKS(hi_i(0) == std::numeric_limits<int>::lowest());
  CHECK(ranks_in_step());
}

TEST_CASE("10. reduce_mean over a dim of size 0 throws (the mean of nothing), float and int") {
  line_mesh m({n_ranks()});
  const auto t = mp::zeros<double, rows, cols>(m, mp::extents{rows{} = 0, cols{} = 2 * nz()});
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::reduce_mean<rows>(t); },
                                         {"meshpp::reduce_mean", "dim 'rows'", "size 0"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::reduce_mean(t); },
                                         {"meshpp::reduce_mean", "dim 'rows'", "size 0"}));
  const auto ti = mp::zeros<int, rows, cols>(m, mp::extents{rows{} = 4, cols{} = 0});
  // integer division by a count of 0 would be SIGFPE
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::reduce_mean<cols>(ti); },
                                         {"meshpp::reduce_mean", "dim 'cols'", "size 0"}));
  // keeping the empty dim reduces over the other: a mean over 0 of rows' ... is fine here
  const auto kept = mp::gather(mp::reduce_mean<rows>(ti));
  CHECK_ALL_RANKS(kept.size() == 0);
  CHECK(ranks_in_step());
}

// --- meshes that do not fit the ranks ---------------------------------------------------------

TEST_CASE("11. a mesh whose product is not the number of ranks throws, too big or too small") {
  using mesh_t = mp::mesh<mp::axes<x, y>, mp::layout<>>;
  const int n = n_ranks();
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] {
        mesh_t m({n, 2});
      },
      {"mesh shape [x:" + std::to_string(n) + ", y:2] needs " + std::to_string(2 * n) +
       " ranks, but the communicator has " + std::to_string(n)}));
  if (n >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(
        [&] {
          mesh_t m({n / 2, 1});
        },
        {"needs " + std::to_string(n / 2) + " ranks"}));
  }
  CHECK(ranks_in_step());
}

TEST_CASE("12. a mesh dim of size 0 or negative throws, naming it") {
  using mesh_t = mp::mesh<mp::axes<x, y>, mp::layout<>>;
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] {
        mesh_t m({0, n_ranks()});
      },
      {"has a mesh dim of size 0", "at least 1 rank"}));
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] {
        mesh_t m({-1, -n_ranks()});
      },
      {"mesh dim of size -1"}));
  CHECK_ALL_RANKS(
      throws_with<mp::error>([] { (void)mp::balanced_grid<2>(0); }, {"at least 1, not 0"}));
  CHECK(ranks_in_step());
}

TEST_CASE("13. ranks that disagree on the mesh shape throw on every rank") {
  using mesh_t = mp::mesh<mp::axes<x, y>, mp::layout<>>;
  const int n = n_ranks();
  // both shapes fit n ranks; rank 0 transposes it
  const std::array<int, 2> shape = world().rank() == 0 ? std::array{1, n} : std::array{n, 1};
  auto make = [&] { mesh_t m(shape); };
  if (n >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(
        make, {"meshpp::mesh: the ranks disagree on the mesh shape", "mesh dim 'x'"}));
  } else {
    CHECK_NOTHROW(make());
  }
  // a shape that is wrong on one rank only: that rank alone would throw, the others would go
  // on to split the communicator and wait there
  const std::array<int, 2> one_off =
      world().rank() == n - 1 ? std::array{n + 1, 1} : std::array{n, 1};
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { mesh_t m(one_off); }, {"meshpp::mesh"}));
  CHECK(ranks_in_step());
}

// --- shift, pad, halo, slice past the size ----------------------------------------------------

TEST_CASE("14. shift past the size: all zeros with boundary::zero, offset mod size with wrap") {
  line_mesh m({n_ranks()});
  const std::size_t nc = 2 * nz();
  const auto t = matrix<double>(m, 3, nc);
  const long far = static_cast<long>(nc) * 2 + 1;  // 2 sizes and one more
  for (long offset : {far, -far, static_cast<long>(nc)}) {
    const auto zero = mp::gather(mp::shift<cols>(t, offset));
    const auto wrap = mp::gather(mp::shift<cols>(t, offset, mp::boundary::wrap));
    bool ok = zero.size() == 3 * nc && wrap.size() == 3 * nc;
    const long size = static_cast<long>(nc);
    for (std::size_t r = 0; ok && r < 3; ++r) {
      for (std::size_t c = 0; c < nc; ++c) {
        const long from = ((static_cast<long>(c) - offset) % size + size) % size;
        ok = ok && zero(r, c) == 0.0 && wrap(r, c) == value(r, static_cast<std::size_t>(from));
      }
    }
    INFO("offset " << offset);
    CHECK_ALL_RANKS(ok);
  }
  CHECK(ranks_in_step());
}

TEST_CASE("15. slice past the end throws, naming the range and the size, without wrapping") {
  line_mesh m({n_ranks()});
  const auto t = matrix<double>(m, 4, nz());
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::slice<rows>(t, 2, 3); },
                             {"meshpp::slice<rows>: [2, 5) is outside the dim of size 4"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::slice<rows>(t, 5, 0); },
                                         {"is outside the dim of size 4"}));
  // begin + size wraps around std::size_t: still outside
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::slice<rows>(t, 2, std::numeric_limits<std::size_t>::max()); },
      {"is outside the dim of size 4"}));
  // an empty slice at the end is fine
  CHECK_ALL_RANKS(mp::gather(mp::slice<rows>(t, 4, 0)).size() == 0);
  CHECK(ranks_in_step());
}

TEST_CASE("16. pad by more than the size, and concat/split_along of mismatched sizes") {
  line_mesh m({n_ranks()});
  const auto t = matrix<double>(m, 2, nz());
  const auto p = mp::gather(mp::pad<rows>(t, 5, 7, -1.0));
  bool ok = p.shape()[0] == 14 && p.shape()[1] == nz();
  for (std::size_t r = 0; ok && r < 14; ++r) {
    for (std::size_t c = 0; c < nz(); ++c) {
      ok = ok && p(r, c) == (r >= 5 && r < 7 ? value(r - 5, c) : -1.0);
    }
  }
  CHECK_ALL_RANKS(ok);
  const auto u = matrix<double>(m, 3, 2 * nz());
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::concat<rows>(t, u); },
                                         {"meshpp::concat<rows>", "size of dim 'cols'"}));
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] {
        (void)mp::split_along<rows>(t, {1, 2});
      },
      {"the sizes add up to 3, not the dim's size 2"}));
  CHECK(ranks_in_step());
}

TEST_CASE("17. halo wider than the dim: an error with wrap, zeros beyond the ends without") {
  line_mesh m({n_ranks()});
  const std::size_t nc = nz();  // one column per rank: a halo of 3 reaches 3 ranks away
  const auto t = matrix<double>(m, 2, nc);
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::halo_exchange<cols>(t, nc + 1, mp::boundary::wrap); },
                             {"meshpp::halo_exchange<cols>: a halo of " + std::to_string(nc + 1) +
                              " is wider than the dim"}));
  const std::size_t w = nc + 2;
  const auto h = mp::halo_exchange<cols>(t, w);
  const std::size_t local = t.local_shape()[1];
  const long first = static_cast<long>(world().rank() * local);  // this rank's first column
  bool ok = h.width == w && h.data.shape()[1] == local + 2 * w;
  for (std::size_t r = 0; ok && r < 2; ++r) {
    for (std::size_t j = 0; j < local + 2 * w; ++j) {
      const long c = first + static_cast<long>(j) - static_cast<long>(w);
      const double want =
          c >= 0 && c < static_cast<long>(nc) ? value(r, static_cast<std::size_t>(c)) : 0.0;
      ok = ok && h.data(r, j) == want;
    }
  }
  CHECK_ALL_RANKS(ok);
  CHECK(ranks_in_step());
}

// --- data files missing, truncated, of the wrong format ---------------------------------------

TEST_CASE("18. read_idx: a missing file, a directory, a truncated file, trailing bytes") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::read_idx(dir / "none"); },
                                         {"meshpp::read_idx: " + (dir / "none"), "no such file"}));
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::read_idx(dir.path.string()); }, {"is a directory"}));
  write_bytes(dir / "short", idx_bytes({3, 4}, 11));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::read_idx(dir / "short"); },
                                         {dir / "short", "truncated"}));
  write_bytes(dir / "header", {0, 0, 8});  // ends inside the magic number
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::read_idx(dir / "header"); }, {"truncated"}));
  write_bytes(dir / "long", idx_bytes({3, 4}, 13));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::read_idx(dir / "long"); },
                                         {"trailing bytes: expected 12 bytes of data"}));
  // the good twin
  write_bytes(dir / "good", idx_bytes({3, 4}, 12));
  const auto a = mp::read_idx(dir / "good");
  CHECK_ALL_RANKS(a.dims == std::vector<std::size_t>{3, 4} && a.data.size() == 12 &&
                  a.data[11] == 1);
  CHECK(ranks_in_step());
}

TEST_CASE("19. read_idx: the wrong format (magic, type, dims, a corrupt gzip)") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  write_bytes(dir / "text", {'h', 'e', 'l', 'l', 'o', '\n', 0, 0});
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::read_idx(dir / "text"); },
                                         {dir / "text", "bad magic number 68 65 6c 6c"}));
  write_bytes(dir / "floats", idx_bytes({2}, 8, 0x0d));
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::read_idx(dir / "floats"); }, {"data type 0x0d"}));
  write_bytes(dir / "rank0", idx_bytes({}, 0));
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::read_idx(dir / "rank0"); }, {"bad number of dims 0"}));
  // gzip magic, then garbage
  write_bytes(dir / "bad.gz", {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 'x', 'y', 'z', 1, 2, 3});
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::read_idx(dir / "bad.gz"); }, {dir / "bad.gz"}));
  CHECK(ranks_in_step());
}

TEST_CASE("20. load_mnist(comm, dir): a file missing or bad on one rank only, every rank throws") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  // a tiny MNIST: 2 training and 1 test image of 2 x 3, labels in range
  write_bytes(dir / "train-images-idx3-ubyte", idx_bytes({2, 2, 3}, 12));
  write_bytes(dir / "train-labels-idx1-ubyte", idx_bytes({2}, 2));
  write_bytes(dir / "t10k-images-idx3-ubyte", idx_bytes({1, 2, 3}, 6));
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({1}, 1));
  const auto good = mp::load_mnist(world(), dir.path.string());
  CHECK_ALL_RANKS(good.rows == 2 && good.cols == 3 && good.train_labels.data.size() == 2);
  // the last rank's test labels are truncated (each rank has its own temp dir)
  const bool odd_one = world().rank() == n_ranks() - 1;
  if (odd_one) write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({1}, 0));
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::load_mnist(world(), dir.path.string()); },
      {odd_one
           ? "meshpp::read_idx"
           : "meshpp: rank " + std::to_string(n_ranks() - 1) + " found bad input: meshpp::read_idx",
       "t10k-labels-idx1-ubyte: truncated"}));
  // labels and images that disagree in number
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({2}, 2));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::load_mnist(world(), dir.path.string()); },
                                         {"2 labels, but"}));
  CHECK(ranks_in_step());
}

TEST_CASE("21. load_text: missing, empty, too short, invalid UTF-8, bad options") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  const auto load = [&](const std::string& name, const mp::text_options& o = {}) {
    return [&, name, o] { (void)mp::load_text(world(), dir / name, o); };
  };
  // the lowest failing rank's message on every rank (each rank has its own temp dir)
  CHECK_ALL_RANKS(throws_with<mp::error>(load("none.txt"), {"none.txt: no such file"}));
  write_bytes(dir / "empty.txt", {});
  CHECK_ALL_RANKS(throws_with<mp::error>(load("empty.txt"), {"is empty (0 bytes)"}));
  { std::ofstream(dir / "short.txt") << "In the beginning"; }
  CHECK_ALL_RANKS(throws_with<mp::error>(load("short.txt"), {"too short: 16 characters"}));
  std::string bytes = text_of(2000);
  bytes[1500] = static_cast<char>(0xc3);  // a lead byte followed by ASCII
  { std::ofstream(dir / "latin1.txt", std::ios::binary) << bytes; }
  CHECK_ALL_RANKS(
      throws_with<mp::error>(load("latin1.txt"), {"invalid UTF-8 at byte offset 1500"}));
  { std::ofstream(dir / "good.txt") << text_of(2000); }
  CHECK_ALL_RANKS(throws_with<mp::error>(load("good.txt", {.validation_fraction = 1.0}),
                                         {"bad options: validation_fraction"}));
  CHECK_ALL_RANKS(throws_with<mp::error>(load("good.txt", {.pad_to = 0}), {"pad_to = 0"}));
  const auto corpus = mp::load_text(world(), dir / "good.txt");
  CHECK_ALL_RANKS(corpus.character_count == 2000 && corpus.vocab_size() == 8);
  CHECK(ranks_in_step());
}

TEST_CASE("22. load_text: ranks that read different text throw on every rank") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  { std::ofstream(dir / "t.txt") << text_of(2000, world().rank() == 0 ? 'a' : 'b'); }
  auto load = [&] { (void)mp::load_text(world(), dir / "t.txt"); };
  if (n_ranks() >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(load, {"ranks read different text"}));
  } else {
    CHECK_NOTHROW(load());
  }
  CHECK(ranks_in_step());
}

TEST_CASE("23. a text corpus misused: unknown character, id past the vocab, window too long") {
  meshpp_test::temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  {
    std::ofstream(dir / "t.txt") << text_of(2000);  // the alphabet a..g, vocab 8
  }
  const auto corpus = mp::load_text(world(), dir / "t.txt");
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)corpus.encode("abz"); },
      {"meshpp::text_corpus::encode", "(character 2, byte offset 2", "is not in the alphabet"}));
  const std::vector<std::int32_t> ids{0, 8};
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)corpus.decode(ids); },
                                         {"meshpp::text_corpus::decode: id 8 is not in [0, 8)"}));
  // a padding id (in the vocab, not the alphabet) decodes to U+FFFD: documented
  const std::vector<std::int32_t> padding{7};
  CHECK_ALL_RANKS(corpus.decode(padding) == "\xef\xbf\xbd");
  const std::size_t n = corpus.train_ids.size();
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::window_starts(n, n + 1, 4, 1, 0); },
      {"meshpp::window_starts: a window of " + std::to_string(n + 1) + " ids does not fit"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::window_starts(n, 0, 4, 1, 0); },
                                         {"a window of 0 ids"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::evaluation_starts(n, 0, 4); },
                                         {"meshpp::evaluation_starts: window is 0"}));
  // a window longer than the validation text: no windows, documented
  CHECK_ALL_RANKS(mp::evaluation_starts(10, 11, 4).empty());
  CHECK(ranks_in_step());
}

// --- ranks that disagree on sizes, seeds, layouts, ids ----------------------------------------

TEST_CASE("24. a tensor made with sizes that differ per rank throws on every rank") {
  line_mesh m({n_ranks()});
  const std::size_t mine = world().rank() == 0 ? 2 * nz() : 4 * nz();
  const auto sizes = mp::extents{rows{} = 3, cols{} = mine};
  auto check = [&](auto make, const char* who) {
    INFO(who);
    if (n_ranks() >= 2) {
      CHECK_ALL_RANKS(throws_with<mp::error>(
          make, {std::string("meshpp::") + who + ": the ranks disagree", "dim 'cols'"}));
    } else {
      CHECK_NOTHROW(make());
    }
  };
  check([&] { (void)mp::zeros<float, rows, cols>(m, sizes); }, "zeros");
  check([&] { (void)mp::full<float, rows, cols>(m, sizes, 2.0f); }, "full");
  check([&] { (void)mp::ones<float, rows, cols>(m, sizes); }, "full");
  check([&] { (void)mp::random_normal<float, rows, cols>(m, sizes, 7); }, "random_normal");
  check([&] { (void)mp::random_uniform<float, rows, cols>(m, sizes, 7); }, "random_uniform");
  check([&] { (void)mp::generate<float, rows, cols>(m, sizes, [](const auto&) { return 1; }); },
        "generate");
  check([&] { (void)mp::iota<cols>(m, mp::extents{cols{} = mine}); }, "generate");
  // a size that differs per rank AND does not divide on some: agreement comes first, so no rank
  // throws alone
  const std::size_t odd = world().rank() == 0 ? nz() : nz() + 1;
  if (n_ranks() >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(
        [&] { (void)mp::zeros<float, cols>(m, mp::extents{cols{} = odd}); }, {"disagree"}));
  }
  CHECK(ranks_in_step());
}

TEST_CASE("25. a random tensor with a rank-dependent seed throws on every rank") {
  // replicated: each rank would hold a different "copy"; split: a tensor no one seed makes
  replicated_mesh r({n_ranks()});
  line_mesh s({n_ranks()});
  const std::uint64_t seed = 10 + static_cast<std::uint64_t>(world().rank());
  const auto sizes = mp::extents{rows{} = 2, cols{} = 2 * nz()};
  auto replicated = [&] { (void)mp::random_normal<float, rows, cols>(r, sizes, seed); };
  auto split = [&] { (void)mp::random_uniform<double, rows, cols>(s, sizes, seed, -1.0, 1.0); };
  if (n_ranks() >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(replicated, {"meshpp::random_normal", "seed"}));
    CHECK_ALL_RANKS(throws_with<mp::error>(split, {"meshpp::random_uniform", "seed"}));
    // the range too
    const double high = world().rank() == 0 ? 1.0 : 2.0;
    CHECK_ALL_RANKS(throws_with<mp::error>(
        [&] { (void)mp::random_uniform<double, rows, cols>(s, sizes, 3, 0.0, high); },
        {"meshpp::random_uniform", "disagree"}));
  } else {
    CHECK_NOTHROW(replicated());
    CHECK_NOTHROW(split());
  }
  // with one seed, the replicas are equal on every rank
  const auto t = mp::random_normal<float, rows, cols>(r, sizes, 10);
  const auto mine = t.local();
  auto first = mine;
  boost::mpi::broadcast(world(), first.data(), static_cast<int>(first.size()), 0);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mine, first));
  CHECK(ranks_in_step());
}

TEST_CASE("26. scatter of arrays whose shapes differ per rank throws on every rank") {
  line_mesh m({n_ranks()});
  const auto sizes = mp::extents{rows{} = 2, cols{} = 2 * nz()};
  const std::size_t mine_rows = world().rank() == 0 ? 2 : 3;
  const xt::xtensor<double, 2> global = xt::zeros<double>({mine_rows, 2 * nz()});
  auto make = [&] { (void)mp::scatter<rows, cols>(m, sizes, global); };
  if (n_ranks() >= 2) {
    // rank 0 repeats rank 1's text; the others report their own
    const std::string cols_text = std::to_string(2 * nz());
    CHECK_ALL_RANKS(throws_with<mp::error>(
        make, {"meshpp::scatter: the global array on rank " +
               std::to_string(std::max(world().rank(), 1)) + " has shape [3, " + cols_text +
               "], but the extents give [rows:2, cols:" + cols_text + "]"}));
  } else {
    CHECK_NOTHROW(make());
  }
  CHECK(ranks_in_step());
}

TEST_CASE("27. ids out of range on one rank only: gather and one_hot throw on every rank") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t m({n_ranks()});
  const std::size_t nv = 5;
  const auto table = mp::ones<float, vocab, cols>(m, mp::extents{vocab{} = nv, cols{} = 3});
  // batch split: each rank holds 2 ids; the last rank's last id is the vocab size
  const auto ids = mp::generate<std::int32_t, batch>(
      m, mp::extents{batch{} = 2 * nz()},
      [&](const auto& i) { return i[0] + 1 == 2 * nz() ? std::int32_t(nv) : std::int32_t(1); });
  const std::string where = "id 5 at ids[batch:" + std::to_string(2 * nz() - 1) +
                            "] is outside [0, 5), the range of dim 'vocab'";
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::take<vocab>(table, ids); },
                                         {"meshpp::take<vocab>(table, ids)", where}));
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::one_hot<vocab>(ids, mp::extents{vocab{} = nv}); },
                             {"meshpp::one_hot<vocab>(ids, sizes)", where}));
  CHECK(ranks_in_step());
}

// --- where ------------------------------------------------------------------------------------

TEST_CASE("28. where(bool tensor, traced, scalar) compiles; its gradient is the mask") {
  line_mesh m({n_ranks()});
  const auto sizes = mp::extents{rows{} = 3, cols{} = 2 * nz()};
  auto w = mp::variable(matrix<double>(m, 3, 2 * nz()), "w");
  const auto mask = mp::generate<bool, rows, cols>(
      m, sizes, [](const auto& i) { return (i[0] + i[1]) % 3 != 0; });
  const auto y = mp::where(mask, w, 0.25);
  const auto loss = mp::reduce_sum(y * y);
  const auto [g] = mp::gradients(loss, w);
  const auto G = mp::gather(g);
  const auto Y = mp::gather(y.value());
  bool ok = true;
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 2 * nz(); ++c) {
      const bool keep = (r + c) % 3 != 0;
      ok = ok && Y(r, c) == (keep ? value(r, c) : 0.25) && G(r, c) == (keep ? 2 * value(r, c) : 0);
    }
  }
  CHECK_ALL_RANKS(ok);
  // the scalar first, the traced branch second
  const auto [g2] = mp::gradients(mp::reduce_sum(mp::where(mask, -1.0, w)), w);
  const auto G2 = mp::gather(g2);
  bool ok2 = true;
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 2 * nz(); ++c) ok2 = ok2 && G2(r, c) == ((r + c) % 3 != 0 ? 0 : 1);
  }
  CHECK_ALL_RANKS(ok2);
}

TEST_CASE("29. where's result takes the branches' dim order, not the condition's") {
  line_mesh m({n_ranks()});
  const auto t = matrix<double>(m, 3, 2 * nz());     // [rows, cols]
  const auto mask = mp::generate<bool, cols, rows>(  // [cols, rows]
      m, mp::extents{rows{} = 3, cols{} = 2 * nz()}, [](const auto& i) { return i[0] % 2 == 0; });
  const auto out = mp::eval(mp::where(mask, t, 0.0));
  static_assert(std::is_same_v<typename decltype(out)::shape_type, mp::shape<rows, cols>>);
  const auto O = mp::gather(out);
  bool ok = O.shape()[0] == 3 && O.shape()[1] == 2 * nz();
  for (std::size_t r = 0; ok && r < 3; ++r) {
    for (std::size_t c = 0; c < 2 * nz(); ++c)
      ok = ok && O(r, c) == (c % 2 == 0 ? value(r, c) : 0.0);
  }
  CHECK_ALL_RANKS(ok);
  // a traced branch keeps it too
  auto w = mp::variable(t, "w");
  const auto traced_out = mp::where(mask, w, 0.0);
  static_assert(
      std::is_same_v<typename std::remove_cvref_t<decltype(traced_out.value())>::shape_type,
                     mp::shape<rows, cols>>);
}
