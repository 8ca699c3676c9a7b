// Checkpoints (meshpp/io/checkpoint.hpp) at one rank count: tensors of four element types
// (split, replicated, of no dims) and scalars saved under every layout of a 3-D mesh of the
// ranks and loaded under every other, bit for bit against tensors generated from the global
// index under the loading layout; Adam, AdamW, SGD with momentum and Adafactor (factored, with m)
// trained 3 steps under one layout, saved, loaded under another into a differently initialised
// model, then 2 more steps on both: the variables equal bit for bit after loading and to 1e-5
// after the steps (the optimizers' state came along); bad input fails on every rank with the
// file, the object and the reason in the message, and leaves the loaded values untouched;
// saving leaves no temporary file; sharded Adam(W) updates give one rank's bits, save
// completes their state, and loading into the same optimizer rolls back exactly. (Other rank
// counts: tests/mpi/io/checkpoint_run.cpp.)
#include <meshpp/io/checkpoint.hpp>
#include <meshpp/meshpp.hpp>

#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/serialization/string.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared_dir.hpp"
#include "temp_dir.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::all_ranks;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(extra);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {

// One mesh type, many layouts: a mesh dim of size 1 splits nothing, so the shapes of
// [x, y, z] give rows:x and cols:y split, alone, both or neither.
using mesh_t = mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<rows, x>, mp::split<cols, y>>>;
const auto sizes = mp::extents{batch{} = 4, rows{} = 8, cols{} = 12, extra{} = 6};

using matrix_t = mp::tensor_of<float, mp::shape<rows, cols>, mesh_t>;
using counts_t = mp::tensor_of<std::int32_t, mp::shape<cols>, mesh_t>;
using wide_t = mp::tensor_of<std::int64_t, mp::shape<rows, extra>, mesh_t>;
using replicated_t = mp::tensor_of<double, mp::shape<extra>, mesh_t>;
using scalar_t = mp::tensor_of<float, mp::shape<>, mesh_t>;

// checkpoint::add's constraints, tested in the language (the library's others:
// unit/requires_rules.cpp). add(variables...): variables, which carry their names; a tensor
// needs one given.
template <class... X>
concept addable = requires(mp::checkpoint& c, X&... x) {
  c.add(x...);
};
static_assert(addable<mp::variable<matrix_t>, mp::variable<counts_t>>);
static_assert(!addable<matrix_t>);
static_assert(!addable<>);
// add(name, x): anything but an optimizer, which add(opt) takes (its state names itself)
template <class X>
concept addable_by_name = requires(mp::checkpoint& c, X& x) {
  c.add("x", x);
};
static_assert(addable_by_name<matrix_t> && addable_by_name<std::int64_t>);
static_assert(!addable_by_name<mp::sgd>);
static_assert(addable<mp::sgd>);  // add(opt)

std::vector<std::array<int, 3>> layouts() {
  return meshpp_test::mesh_shapes<3>(world().size(), {8, 12, world().size()});
}

using meshpp_test::shared_dir;

// the tensors, from the global index (so the same values under every layout), shifted by k
struct tensors {
  matrix_t matrix;
  counts_t counts;
  wide_t wide;
  replicated_t replicated;
  scalar_t scalar;
  tensors(const mesh_t& m, int k)
      : matrix(mp::random_normal<matrix_t>(m, sizes, 7 + static_cast<std::uint64_t>(k))),
        counts(mp::generate<counts_t>(
            m, sizes, [k](const auto& i) { return static_cast<std::int32_t>(i[0] * 1000 + k); })),
        wide(mp::generate<wide_t>(
            m, sizes,
            [k](const auto& i) {
              return static_cast<std::int64_t>(i[0] * 10 + i[1]) * 4000000000ll + k;
            })),
        replicated(mp::generate<replicated_t>(
            m, sizes, [k](const auto& i) { return 0.5 * static_cast<double>(i[0]) + k; })),
        scalar(mp::generate<scalar_t>(m, sizes, [k](const auto&) { return 2.5f + k; })) {}
  void add_to(mp::checkpoint& c) {
    c.add("matrix", matrix)
        .add("nested/counts", counts)
        .add("nested/deeper/wide", wide)
        .add("replicated", replicated)
        .add("scalar", scalar);
  }
};

template <class T>
bool same_local(const T& a, const T& b) {
  return meshpp_test::bit_equal(a.local(), b.local());
}
bool same(const tensors& a, const tensors& b) {
  return same_local(a.matrix, b.matrix) && same_local(a.counts, b.counts) &&
         same_local(a.wide, b.wide) && same_local(a.replicated, b.replicated) &&
         same_local(a.scalar, b.scalar);
}

// throws_everywhere(f, parts): f throws meshpp::error on every rank, its message holding
// every part
template <class F>
bool throws_everywhere(F&& f, std::initializer_list<std::string> parts) {
  bool ok = false;
  std::string message;
  try {
    f();
  } catch (const mp::error& e) {
    message = e.what();
    ok = true;
    for (const auto& p : parts) ok = ok && message.find(p) != std::string::npos;
  }
  if (!ok) MESSAGE("rank " << world().rank() << " got: '" << message << "'");
  return all_ranks(ok);
}

}  // namespace

TEST_CASE("tensors and scalars saved under one layout load under every other") {
  shared_dir dir;
  const auto shapes = layouts();
  for (const auto& from : shapes) {
    const mesh_t saving(from);
    tensors saved(saving, 0);
    std::int64_t step = 1234567890123;
    double rate = 0.125;
    std::uint32_t epoch = 3;
    bool flag = true;
    mp::dropout_layer dropout(0.1, 5);
    dropout.set_step(77);
    mp::checkpoint out;
    saved.add_to(out);
    out.add("step", step).add("rate", rate).add("epoch", epoch).add("flag", flag);
    out.add("dropout", dropout);
    const std::string file = dir / "tensors.h5";
    mp::save(file, saving, out);
    for (const auto& to : shapes) {
      CAPTURE(saving.describe());
      const mesh_t loading(to);
      CAPTURE(loading.describe());
      tensors loaded(loading, 100);  // other values, to be overwritten
      std::int64_t step2 = 0;
      double rate2 = 0;
      std::uint32_t epoch2 = 0;
      bool flag2 = false;
      mp::dropout_layer dropout2(0.1, 5);
      mp::checkpoint in;
      loaded.add_to(in);
      in.add("step", step2).add("rate", rate2).add("epoch", epoch2).add("flag", flag2);
      in.add("dropout", dropout2);
      mp::load(file, loading, in);
      const tensors want(loading, 0);
      CHECK(all_ranks(same(loaded, want)));
      CHECK(step2 == step);
      CHECK(rate2 == rate);
      CHECK(epoch2 == epoch);
      CHECK(flag2 == flag);
      CHECK(dropout2.step() == 77);
    }
  }
  // a save leaves the file and nothing else (the temporary was renamed)
  if (world().rank() == 0) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      names.push_back(e.path().filename().string());
    CHECK(names == std::vector<std::string>{"tensors.h5"});
  }
}

namespace {

// a small model: loss = mean((x w)^2 + w^2 / 2) over [batch, cols], w [rows, cols]
struct model {
  using x_t = mp::tensor_of<float, mp::shape<batch, rows>, mesh_t>;
  mp::variable<matrix_t> w;
  mp::variable<mp::tensor_of<float, mp::shape<cols>, mesh_t>> b;
  x_t x;
  model(const mesh_t& m, std::uint64_t seed)
      : w(mp::random_normal<matrix_t>(m, sizes, seed), "w"),
        b(mp::random_normal<mp::tensor_of<float, mp::shape<cols>, mesh_t>>(m, sizes, seed + 1),
          "bias"),
        x(mp::random_normal<x_t>(m, sizes, 99)) {}
  void step(mp::optimizer& opt) {
    auto h = mp::einsum<mp::shape<batch, cols>>(x, w) + b;
    auto loss = mp::reduce_mean(h * h) + mp::reduce_mean(w * w);
    mp::backward(loss);
    opt.step();
  }
};

std::unique_ptr<mp::optimizer> make(const std::string& kind, model& net) {
  if (kind == "adam")
    return std::make_unique<mp::adam>(mp::adam_options{.learning_rate = 0.05}, net.w, net.b);
  if (kind == "adamw")
    return std::make_unique<mp::adamw>(
        mp::adamw_options{.learning_rate = 0.05, .weight_decay = 0.1}, net.w, net.b);
  if (kind == "sgd")
    return std::make_unique<mp::sgd>(mp::sgd_options{.learning_rate = 0.05, .momentum = 0.9}, net.w,
                                     net.b);
  return std::make_unique<mp::adafactor>(
      mp::adafactor_options{.beta1 = 0.9, .min_dim_size_to_factor = 4}, net.w, net.b);
}

bool close(const xt::xtensor<float, 2>& a, const xt::xtensor<float, 2>& b, double tolerance) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a.data()[i]) - b.data()[i]);
    if (d > tolerance * (1 + std::abs(static_cast<double>(a.data()[i])))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("optimizer state saved under one layout continues under another") {
  shared_dir dir;
  const auto shapes = layouts();
  const auto from = shapes.front(), to = shapes.back();  // e.g. replicated, then split
  for (std::string kind : {"adam", "adamw", "sgd", "adafactor"}) {
    CAPTURE(kind);
    const mesh_t a(from), b(to);
    model first(a, 1);
    auto opt = make(kind, first);
    for (int s = 0; s < 3; ++s) first.step(*opt);
    mp::checkpoint out;
    out.add(first.w, first.b).add(*opt);
    mp::save(dir / "opt.h5", a, out);

    model second(b, 50);  // other initial values
    auto opt2 = make(kind, second);
    opt2->set_learning_rate(0.5);  // restored by load
    mp::checkpoint in;
    in.add(second.w, second.b).add(*opt2);
    mp::load(dir / "opt.h5", b, in);
    CHECK(meshpp_test::bit_equal(mp::gather(first.w.value()), mp::gather(second.w.value())));
    CHECK(opt2->steps() == 3);
    CHECK(opt2->learning_rate() == opt->learning_rate());
    for (int s = 0; s < 2; ++s) {
      first.step(*opt);
      second.step(*opt2);
    }
    CHECK(close(mp::gather(first.w.value()), mp::gather(second.w.value()), 1e-5));
    // without the state the continuation differs (the check above can fail)
    model third(b, 50);
    auto opt3 = make(kind, third);
    mp::checkpoint only_variables;
    only_variables.add(third.w, third.b);
    mp::load(dir / "opt.h5", b, only_variables);
    for (int s = 0; s < 2; ++s) third.step(*opt3);
    CHECK_FALSE(close(mp::gather(first.w.value()), mp::gather(third.w.value()), 1e-5));
  }
}

TEST_CASE("sharded updates: one rank's bits, the state completed by save, a rollback") {
  // w and b replicated over z: the ranks share each Adam(W) update (optim/optimizer.hpp),
  // against the same model on a mesh of this rank alone, which updates everything itself
  shared_dir dir;
  const mesh_t shared({1, 1, world().size()});
  const mesh_t alone({1, 1, 1}, boost::mpi::communicator(MPI_COMM_SELF, boost::mpi::comm_attach));
  for (std::string kind : {"adam", "adamw"}) {
    CAPTURE(kind);
    model net(shared, 1), ref(alone, 1);
    auto opt = make(kind, net);
    auto opt_ref = make(kind, ref);
    // sharded on every step (sharding::measured, the default, would time whole updates from
    // the 4th step on)
    opt->set_sharding(mp::sharding::on);
    auto same_as_ref = [&] {
      return all_ranks(meshpp_test::bit_equal(net.w.value().local(), ref.w.value().local()) &&
                       meshpp_test::bit_equal(net.b.value().local(), ref.b.value().local()));
    };
    for (int s = 0; s < 3; ++s) {
      net.step(*opt);
      ref.step(*opt_ref);
    }
    CHECK(same_as_ref());
    mp::checkpoint c;
    c.add(net.w, net.b).add(*opt);
    shared.counters().reset();
    mp::save(dir / "sharded.h5", shared, c);
    // save completed the state: one allgather per state tensor (m and v) of each variable
    // (w, b), when there are replicas to gather from
    CHECK(shared.counters().total(mp::collective::allgather).calls ==
          (world().size() > 1 ? 4u : 0u));
    const matrix_t saved = net.w.value();
    for (int s = 0; s < 2; ++s) {
      net.step(*opt);
      ref.step(*opt_ref);
    }
    CHECK(same_as_ref());
    const matrix_t after = net.w.value();
    // back to the saved step in the same optimizer (its state in shares again), then the same
    // two steps: the same bits, so the file held every share's state
    mp::load(dir / "sharded.h5", shared, c);
    CHECK(all_ranks(meshpp_test::bit_equal(net.w.value().local(), saved.local())));
    for (int s = 0; s < 2; ++s) net.step(*opt);
    CHECK(all_ranks(meshpp_test::bit_equal(net.w.value().local(), after.local())));
    // saved by each rank alone while the state is in shares: an error before any
    // communication (completing it would wait for the other ranks), not a hang
    if (world().size() > 1) {
      mp::checkpoint each;
      each.add(net.w, net.b).add(*opt);
      CHECK(throws_everywhere(
          [&] { mp::save(dir / "alone.h5", alone, each); },
          {"the optimizer state of variable 'w' is in shares", "save with the variables' mesh"}));
    }
    // a visitor reading the state for saving, while it is in shares: an error on every rank
    // (the moments outside this rank's share are stale), until complete_state()
    struct save_walk : mp::state_visitor {
      mode what() const override { return mode::save; }
      void kind(std::string_view) override {}
      void integer(std::string_view, std::int64_t&) override {}
      void number(std::string_view, double&) override {}
      void optional_number(std::string_view, std::optional<double>&) override {}
      bool has_tensor(std::string_view) override { return false; }
      void tensor(std::string_view, const mp::block_view&) override { ++tensors; }
      int tensors = 0;
    } walk;
    if (world().size() > 1) {
      CHECK(throws_everywhere(
          [&] { opt->visit_slot(0, walk); },
          {"the state of variable 'w' is current only in this rank's share", "complete_state()"}));
    }
    opt->complete_state();
    opt->visit_slot(0, walk);
    CHECK(walk.tensors == 2);  // m and v
    // the same ranks in another order (MPI_SIMILAR): the state completes over the variables'
    // own groups, and the file continues as the one saved with their mesh does
    boost::mpi::communicator reversed =
        boost::mpi::communicator(world()).split(0, world().size() - 1 - world().rank());
    const mesh_t backwards({1, 1, world().size()}, reversed);
    for (int s = 0; s < 2; ++s) net.step(*opt);
    const matrix_t before = net.w.value();
    mp::save(dir / "reversed.h5", backwards, c);
    net.step(*opt);
    const matrix_t next = net.w.value();
    mp::load(dir / "reversed.h5", shared, c);
    CHECK(all_ranks(meshpp_test::bit_equal(net.w.value().local(), before.local())));
    net.step(*opt);
    CHECK(all_ranks(meshpp_test::bit_equal(net.w.value().local(), next.local())));
  }
}

TEST_CASE("sharded state: saved in shares, loaded whole, and back; the same bits") {
  // w and b replicated over z: under shard_level::state each rank holds its share of the state
  // alone; a save gathers each state array, a load keeps this rank's share
  shared_dir dir;
  const mesh_t shared({1, 1, world().size()});
  for (std::string kind : {"sgd", "adam", "adamw"}) {
    CAPTURE(kind);
    model net(shared, 1), plain(shared, 1), again(shared, 1);
    auto sharded = make(kind, net);
    sharded->set_shard(mp::shard_level::state);
    for (int s = 0; s < 3; ++s) net.step(*sharded);
    mp::checkpoint out;
    out.add(net.w, net.b).add(*sharded);
    shared.counters().reset();
    mp::save(dir / "state.h5", shared, out);
    // one allgather per state array (sgd: the momentum; adam: m and v) of w and of b
    const std::uint64_t arrays = kind == "sgd" ? 2 : 4;
    CHECK(shared.counters().total(mp::collective::allgather).calls ==
          (world().size() > 1 ? arrays : 0u));
    // into an unsharded optimizer: the same steps after it
    auto whole = make(kind, plain);
    mp::checkpoint in;
    in.add(plain.w, plain.b).add(*whole);
    mp::load(dir / "state.h5", shared, in);
    for (int s = 0; s < 2; ++s) {
      net.step(*sharded);
      plain.step(*whole);
    }
    CHECK(all_ranks(meshpp_test::bit_equal(net.w.value().local(), plain.w.value().local())));
    CHECK(all_ranks(meshpp_test::bit_equal(net.b.value().local(), plain.b.value().local())));
    // and from the unsharded one back into a sharded one, chosen before the load
    mp::save(dir / "whole.h5", shared, in);
    auto back = make(kind, again);
    back->set_shard(mp::shard_level::state);
    mp::checkpoint into;
    into.add(again.w, again.b).add(*back);
    mp::load(dir / "whole.h5", shared, into);
    CHECK(back->state_bytes() == sharded->state_bytes());  // this rank's share, as before
    for (int s = 0; s < 2; ++s) {
      plain.step(*whole);
      again.step(*back);
    }
    CHECK(all_ranks(meshpp_test::bit_equal(plain.w.value().local(), again.w.value().local())));
    if (world().size() > 1) CHECK(back->state_bytes() < whole->state_bytes());
  }
}

TEST_CASE("bad input fails on every rank, naming the file, the object and the reason") {
  shared_dir dir;
  const mesh_t m(layouts().back());
  tensors saved(m, 0);
  std::int64_t step = 5;
  mp::checkpoint out;
  saved.add_to(out);
  out.add("step", step);
  const std::string good = dir / "good.h5";
  mp::save(good, m, out);
  model net(m, 1);
  mp::adam adam({}, net.w, net.b);
  net.step(adam);
  mp::checkpoint with_adam;
  with_adam.add(net.w, net.b).add(adam);
  mp::save(dir / "adam.h5", m, with_adam);

  tensors target(m, 100);
  const tensors untouched(m, 100);
  auto load_into_target = [&](const std::string& file) {
    mp::checkpoint in;
    target.add_to(in);
    std::int64_t s = 0;
    in.add("step", s);
    mp::load(file, m, in);
  };

  SUBCASE("missing file") {
    CHECK(throws_everywhere([&] { load_into_target(dir / "none.h5"); },
                            {"meshpp::load('" + dir / "none.h5" + "')", "cannot read the file"}));
  }
  SUBCASE("not an HDF5 file") {
    if (world().rank() == 0) std::ofstream(dir / "text.h5") << "not hdf5\n";
    world().barrier();
    CHECK(throws_everywhere([&] { load_into_target(dir / "text.h5"); },
                            {"text.h5", "not an HDF5 file"}));
  }
  SUBCASE("truncated file") {
    if (world().rank() == 0) {
      const auto size = std::filesystem::file_size(good);
      std::filesystem::copy_file(good, dir / "cut.h5");
      std::filesystem::resize_file(dir / "cut.h5", size / 2);
    }
    world().barrier();
    CHECK(throws_everywhere([&] { load_into_target(dir / "cut.h5"); },
                            {"cut.h5", "H5Fopen failed", "truncated"}));
  }
  SUBCASE("corrupt data") {
    // four bytes inside /variables/matrix's data flipped: HDF5 opens the file and reads it
    // without complaint; the checksum finds it
    if (world().rank() == 0) {
      std::filesystem::copy_file(good, dir / "flipped.h5");
      const hid_t f = H5Fopen((dir / "flipped.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      const hid_t d = H5Dopen2(f, "/variables/matrix", H5P_DEFAULT);
      const haddr_t at = H5Dget_offset(d);
      H5Dclose(d);
      H5Fclose(f);
      REQUIRE(at != HADDR_UNDEF);
      std::fstream io(dir / "flipped.h5", std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(static_cast<std::streamoff>(at + 20));
      io.write("\xa5\xa5\xa5\xa5", 4);
    }
    world().barrier();
    CHECK(throws_everywhere([&] { load_into_target(dir / "flipped.h5"); },
                            {"flipped.h5", "'/variables/matrix'",
                             "the data do not match their checksum: the file is corrupt"}));
    target = tensors(m, 100);  // it holds what was read
  }
  SUBCASE("not a meshpp checkpoint") {
    // the h5 of another program: a valid HDF5 file without meshpp's format attribute
    if (world().rank() == 0) {
      const hid_t f =
          H5Fcreate((dir / "other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      H5Fclose(f);
    }
    world().barrier();
    CHECK(throws_everywhere([&] { load_into_target(dir / "other.h5"); },
                            {"other.h5", "attribute format", "missing"}));
  }
  SUBCASE("a dataset missing") {
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          target.add_to(in);
          in.add("absent", target.matrix);
          mp::load(good, m, in);
        },
        {"good.h5", "'/variables/absent'", "dataset is missing"}));
  }
  SUBCASE("a scalar missing") {
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          double other = 0;
          in.add("learning_rate", other);
          mp::load(good, m, in);
        },
        {"/scalars attribute learning_rate", "missing"}));
  }
  SUBCASE("other sizes") {
    const auto bigger = mp::extents{rows{} = 16, cols{} = 12};
    matrix_t big(m, bigger);
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          in.add("matrix", big);
          mp::load(good, m, in);
        },
        {"'/variables/matrix'", "has shape [8, 12] over dims [rows, cols], the tensor [16, 12]"}));
  }
  SUBCASE("other dim names or order") {
    mp::tensor_of<float, mp::shape<cols, rows>, mesh_t> transposed(m, sizes);
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          in.add("matrix", transposed);
          mp::load(good, m, in);
        },
        {"'/variables/matrix'", "has dims [rows, cols], the tensor [cols, rows]"}));
  }
  SUBCASE("another element type") {
    mp::tensor_of<double, mp::shape<rows, cols>, mesh_t> doubles(m, sizes);
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          in.add("matrix", doubles);
          mp::load(good, m, in);
        },
        {"'/variables/matrix'", "holds float32, the tensor float64"}));
  }
  SUBCASE("another optimizer") {
    model other(m, 2);
    mp::sgd sgd({}, other.w, other.b);
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          in.add(other.w, other.b).add(sgd);
          mp::load(dir / "adam.h5", m, in);
        },
        {"adam.h5", "/optimizer attribute kind", "holds the state of [adam], not of sgd"}));
  }
  SUBCASE("an optimizer where none was saved") {
    model other(m, 2);
    mp::adam adam2({}, other.w, other.b);
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint in;
          in.add("matrix", other.w).add(adam2);
          mp::load(good, m, in);
        },
        {"'/optimizer'", "group is missing"}));
  }
  SUBCASE("bad names") {
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint c;
          c.add("a", target.matrix).add("a", target.counts);
          mp::save(dir / "x.h5", m, c);
        },
        {"meshpp::save", "tensor name 'a' is given twice"}));
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint c;
          c.add("a", target.matrix).add("a/b", target.counts);
          mp::save(dir / "x.h5", m, c);
        },
        {"tensor name 'a' is also a group of 'a/b'"}));
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint c;
          c.add("", target.matrix);
          mp::save(dir / "x.h5", m, c);
        },
        {"tensor name '' is empty"}));
  }
  SUBCASE("a directory that does not exist") {
    CHECK(throws_everywhere(
        [&] {
          mp::checkpoint c;
          c.add("a", target.matrix);
          mp::save(dir / "no/such/dir/x.h5", m, c);
        },
        {"meshpp::save", "does not exist"}));
  }
  // every failed load left the target as it was
  CHECK(all_ranks(same(target, untouched)));
}
