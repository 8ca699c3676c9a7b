// Plans (plan/plan.hpp): a step planned on a planned mesh, with no communication and no
// arithmetic, predicts per operation exactly what the counters of the real step record on the
// same rank: the collectives (kind, mesh dims, calls, values, bytes sent), the einsum flops and
// the bytes of the tensors each operation makes. The step is the README's MNIST network
// (einsum, relu, einsum, softmax cross-entropy, mean), its backward pass with gradient buckets
// and an Adam step, under every layout of one mesh type: batch over x, hidden over y, on every
// mesh shape [x, y, rest] of the ranks (replicated, data, model, data+model, and rest > 1).
#include <meshpp/meshpp.hpp>
#include <meshpp/plan/enumerate.hpp>
#include <meshpp/plan/search.hpp>

#include <cblas.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::all_ranks;
using meshpp_test::world;

namespace {
MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(rest);

using mesh_t =
    mp::mesh<mp::axes<x, y, rest>, mp::layout<mp::split<batch, x>, mp::split<hidden, y>>>;
MESHPP_DIM(length);
MESHPP_DIM(memory_length);
MESHPP_DIM(d_model);
using seq_mesh_t =
    mp::mesh<mp::axes<x, y>, mp::layout<mp::split<length, x>, mp::split<memory_length, y>>>;

// one training step of the README's network; everything it makes is made here, so a plan
// counts the variables and the optimizer's slots too
// (with plain SGD, which keeps no state, when sgd)
void mnist_step(const mesh_t& m, std::size_t bucket_bytes, bool sgd = false,
                mp::shard_level shard = mp::shard_level::none) {
  const auto sizes = mp::extents{batch{} = 8, rows{} = 4, cols{} = 6, hidden{} = 12, classes{} = 5};
  mp::variable w1(mp::random_uniform<float, rows, cols, hidden>(m, sizes, 1, -0.5f, 0.5f), "w1");
  mp::variable w2(mp::random_uniform<float, hidden, classes>(m, sizes, 2, -0.5f, 0.5f), "w2");
  mp::adam adam(mp::adam_options{.learning_rate = 1e-3}, w1, w2);
  mp::sgd plain({.learning_rate = 0.1}, w1, w2);
  (sgd ? static_cast<mp::optimizer&>(plain) : adam).set_shard(shard);
  const auto images = mp::random_uniform<float, batch, rows, cols>(m, sizes, 3, 0.0f, 1.0f);
  using labels_t = mp::tensor_of<std::int32_t, mp::shape<batch>, mesh_t>;
  const auto labels = mp::generate<labels_t>(
      m, sizes, [](const auto& i) { return static_cast<std::int32_t>(i[0] % 5); });
  const auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(images, w1));
  const auto logits = mp::einsum<mp::shape<batch, classes>>(h, w2);
  const auto loss = mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits, labels));
  mp::backward(loss, {.bucket_bytes = bucket_bytes});
  if (sgd)
    plain.step();
  else
    adam.step();
}

// a sequence's scores against itself, as attention makes them: a rename (length to
// memory_length), a product, a softmax over memory_length and a mean; under seq_mesh_t the
// rename gathers length over x, and the softmax reduces over y
void seq_step(const seq_mesh_t& m) {
  const auto sizes = mp::extents{batch{} = 4, length{} = 6, memory_length{} = 6, d_model{} = 8};
  const auto a = mp::random_uniform<float, batch, length, d_model>(m, sizes, 1, -1.0f, 1.0f);
  const auto memory = mp::rename<length, memory_length>(a);
  const auto scores = mp::einsum<mp::shape<batch, length, memory_length>>(a, memory);
  const auto mean = mp::reduce_mean(mp::softmax<memory_length>(scores));
  (void)mean;
}

// user_product(h, w, described): h [batch, hidden] x w [hidden, classes] -> [batch, classes], a
// user's own operation: one gemm of the local slices, then the allreduce over y, where the
// mesh's rules split hidden, as einsum would do it. described: it records an
// operation_descriptor of kind einsum with its operands' and result's dims; else only a name
template <class H, class W>
void user_product(const H& h, const W& w, bool described) {
  const mesh_t& m = h.mesh();
  const auto scope = m.counters().operation([&] {
    auto d = mp::named_operation("user product");
    if (described) {
      d.kind = mp::operation_kind::einsum;
      d.dims = {{"batch", "hidden"}, {"hidden", "classes"}, {"batch", "classes"}};
    }
    return d;
  });
  using out_t = mp::tensor_of<float, mp::shape<batch, classes>, mesh_t>;
  out_t out(
      m,
      mp::extents{batch{} = h.template extent<batch>(), classes{} = w.template extent<classes>()},
      out_t::uninitialized);
  const std::size_t rows = h.local_shape()[0], inner = h.local_shape()[1],
                    columns = w.local_shape()[1];
  if (!m.planning()) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(columns), static_cast<int>(inner), 1.0f, h.local().data(),
                static_cast<int>(std::max<std::size_t>(inner, 1)), w.local().data(),
                static_cast<int>(std::max<std::size_t>(columns, 1)), 0.0f, out.local().data(),
                static_cast<int>(std::max<std::size_t>(columns, 1)));
  }
  m.counters().record_einsum(2ull * rows * columns * inner, {rows, columns, inner, false, false},
                             1);
  mp::allreduce<mp::over<y>>::run(m, std::span(out.local().data(), out.local().size()));
}

// the network's second layer forward, its product einsum's or the user's (described or named)
enum class product_by { einsum, described, named };
void second_layer(const mesh_t& m, product_by by) {
  const auto sizes = mp::extents{batch{} = 8, hidden{} = 12, classes{} = 5};
  const auto h = mp::random_uniform<float, batch, hidden>(m, sizes, 1, -1.0f, 1.0f);
  const auto w = mp::random_uniform<float, hidden, classes>(m, sizes, 2, -1.0f, 1.0f);
  if (by == product_by::einsum)
    (void)mp::einsum<mp::shape<batch, classes>>(h, w);
  else
    user_product(h, w, by == product_by::described);
}

// batch_and_hidden_on(e, batch_axis, hidden_axis): a layout of e's dims, batch and hidden on
// those mesh axes (-1: whole), every other dim whole
std::vector<int> batch_and_hidden_on(const mp::layout_enumeration& e, int batch_axis,
                                     int hidden_axis) {
  std::vector<int> a;
  for (const auto& d : e.dims())
    a.push_back(d == "batch" ? batch_axis : d == "hidden" ? hidden_axis : -1);
  return a;
}

std::string describe(const std::vector<mp::operation_count>& ops, const mp::counters& c) {
  std::string out;
  for (const auto& o : ops) {
    out += o.phase + " | " + o.name + " | runs " + std::to_string(o.runs) + " flops " +
           std::to_string(o.flops) + " made " + std::to_string(o.bytes_made) + "\n";
    for (const auto& e : o.collectives) {
      out += "    " + std::string(mp::collective_name(e.kind)) + " over " +
             c.mesh_dims_text(e.mask) + ": " + std::to_string(e.count.calls) + " calls " +
             std::to_string(e.count.values) + " values " + std::to_string(e.count.bytes_sent) +
             " B\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("plan: every operation's collectives, flops and bytes equal the real step's counters") {
  // (shard levels: the optimizer's state and the gradients in shares, their reduce-scatters,
  // allgathers and state made as the step makes them)
  const auto levels = {mp::shard_level::none, mp::shard_level::state, mp::shard_level::gradients};
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    for (const auto shard : levels) {
      for (std::size_t bucket_bytes : {std::size_t{0}, std::size_t{4} << 20}) {
        CAPTURE(static_cast<int>(shard));
        const mesh_t real(shape);
        real.counters().by_operation(true);
        mnist_step(real, bucket_bytes, false, shard);
        const auto p = mp::make_plan<mesh_t>(
            shape, [&](const mesh_t& m) { mnist_step(m, bucket_bytes, false, shard); },
            world().rank());
        const bool same = p.operations() == real.counters().operations();
        INFO("mesh " << real.describe() << ", buckets of " << bucket_bytes << " bytes, rank "
                     << world().rank() << "\nplanned:\n"
                     << describe(p.operations(), real.counters()) << "measured:\n"
                     << describe(real.counters().operations(), real.counters()));
        CHECK(all_ranks(same));
        // and the totals agree with the whole-mesh counters
        for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
          const auto kind = static_cast<mp::collective>(k);
          CHECK(all_ranks(p.total(kind) == real.counters().total(kind)));
        }
        CHECK(all_ranks(p.flops() == real.counters().einsum_flops()));
        // the plan is not empty: the step's einsums were planned (forward 2, backward 4 at most)
        CHECK(p.flops() > 0);
        CHECK(p.report().find("einsum [batch, rows, cols] x [rows, cols, hidden]") !=
              std::string::npos);
      }
    }
  }
}

TEST_CASE("profile: a step timed by operation, beside its plan priced per operation") {
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t real(shape);
    const auto start = std::chrono::steady_clock::now();  // before the counters' first mark
    real.counters().by_operation(true, /*timed*/ true);
    CHECK(real.counters().timed());
    mnist_step(real, std::size_t{4} << 20);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto p = mp::make_plan<mesh_t>(
        shape, [&](const mesh_t& m) { mnist_step(m, std::size_t{4} << 20); }, world().rank());
    CAPTURE(real.describe());
    // timing adds no row and changes no count: the plan still equals the run
    CHECK(all_ranks(p.operations() == real.counters().operations()));
    // every operation that ran was charged time; the charges add up to no more than the step
    double charged = real.counters().unattributed_seconds();
    bool each_timed = true;
    for (const auto& o : real.counters().operations()) {
      charged += o.seconds;
      if (o.runs > 0 && !(o.seconds > 0)) each_timed = false;
    }
    CHECK(all_ranks(each_timed));
    CHECK(charged > 0);
    CHECK(charged <= wall + 1e-6);
    // the plan has no time; its price per operation adds up to the step's
    const auto machine = mp::machine_model::defaults();
    double per_operation = 0;
    for (const auto& o : p.operations()) {
      CHECK(o.seconds == 0);
      per_operation += mp::predict(o, p, machine).total();
    }
    CHECK(per_operation == doctest::Approx(mp::predict(p, machine).total()).epsilon(1e-12));
    // the table: a line per operation of the plan, then the totals
    const std::string table = mp::profile_table(p, real.counters(), 1, machine);
    for (const auto& o : p.operations()) CHECK(table.find(o.name) != std::string::npos);
    CHECK(table.find("\ntotal ") != std::string::npos);
    CHECK(table.find("(no operation)") != std::string::npos);
    // untimed counters have nothing to compare
    CHECK(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::profile_table(p, p.counts(), 1, machine); },
        {"meshpp::profile_table: the measured counters must be timed"}));
  }
}

TEST_CASE(
    "gemm shapes: each einsum's gemm calls make its flops, and each shape is priced at its "
    "own rate") {
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const auto p = mp::make_plan<mesh_t>(
        shape, [&](const mesh_t& m) { mnist_step(m, 0); }, world().rank());
    CAPTURE(p.mesh());
    // the gemm calls of every operation add up to its flops
    std::size_t shapes = 0;
    for (const auto& o : p.operations()) {
      std::uint64_t flops = 0;
      for (const auto& g : o.gemms) flops += 2 * g.shape.m * g.shape.n * g.shape.k * g.calls;
      CHECK(flops == o.flops);
      shapes += o.gemms.size();
    }
    CHECK(shapes > 0);
    // the first layer's product on this rank: [batch/x, rows cols] x [rows cols, hidden/y], one
    // gemm (near-equal stripes where x or y does not divide 8 or 12)
    const auto px = static_cast<std::size_t>(shape[0]), py = static_cast<std::size_t>(shape[1]);
    const auto here = mesh_t::planned(shape, world().rank()).coordinates();
    const auto cx = static_cast<std::size_t>(here[0]), cy = static_cast<std::size_t>(here[1]);
    const std::size_t local_batch = 8 / px + (cx < 8 % px ? 1 : 0);
    const std::size_t local_hidden = 12 / py + (cy < 12 % py ? 1 : 0);
    for (const auto& o : p.operations()) {
      if (o.phase != "forward" || !o.name.starts_with("einsum [batch, rows, cols]")) continue;
      REQUIRE(o.gemms.size() == 1);
      CHECK(o.gemms[0].calls == 1);
      const auto& g = o.gemms[0].shape;
      CHECK(g.k == 24);
      CHECK(g.m * g.n == local_batch * local_hidden);
    }
    // time_gemms: every shape gets a rate once; the price follows the rates
    auto machine = mp::machine_model::defaults();
    const std::size_t timed = mp::time_gemms(machine, p, 1e-4);
    CHECK(timed > 0);
    CHECK(mp::time_gemms(machine, p, 1e-4) == 0);  // all known now
    double compute = 0;
    for (const auto& o : p.operations()) {
      for (const auto& g : o.gemms) {
        CHECK(machine.has_gemm_rate(g.shape) == (g.shape.m > 0 && g.shape.n > 0 && g.shape.k > 0));
        compute += machine.gemm_seconds(g.shape, static_cast<double>(g.calls));
      }
    }
    CHECK(mp::predict(p, machine).compute == doctest::Approx(compute).epsilon(1e-12));
    // a rate set by hand is the one used
    auto fixed = mp::machine_model::defaults();
    const mp::gemm_shape s{10, 20, 30, false, true};
    fixed.set_gemm_rate(s, 1e9);
    CHECK(fixed.gemm_seconds(s, 2) == doctest::Approx(2 * 2.0 * 10 * 20 * 30 / 1e9));
    CHECK(fixed.gemm_seconds(mp::gemm_shape{10, 20, 30}, 1) ==
          doctest::Approx(fixed.gemm_seconds(2.0 * 10 * 20 * 30)));
    CHECK_THROWS_WITH_AS(fixed.set_gemm_rate(s, 0), doctest::Contains("a rate must be finite"),
                         mp::error);
  }
}

TEST_CASE("plan: a planned mesh makes no MPI call, and names what cannot be planned") {
  // 64 ranks planned from whatever this run has: no communicator of that size exists
  const auto p = mp::make_plan<mesh_t>(
      {4, 4, 4}, [](const mesh_t& m) { mnist_step(m, 0); }, 63);
  CHECK(p.rank() == 63);
  CHECK(p.total(mp::collective::allreduce).calls > 0);
  const auto planned = mesh_t::planned({4, 4, 4}, 5);
  CHECK(planned.planning());
  CHECK(planned.size() == 64);
  CHECK(planned.coordinates() == mesh_t::coordinates_type{0, 1, 1});
  CHECK(planned.group_size(mesh_t::mask_v<x, y>) == 16);
  CHECK(planned.group_rank(mesh_t::mask_v<y, rest>) == 5);
  CHECK_THROWS_WITH_AS(planned.world(),
                       doctest::Contains("a planned mesh (mesh::planned) has no "
                                         "communicators"),
                       mp::error);
  CHECK_THROWS_WITH_AS(mesh_t::planned({2, 0, 1}), doctest::Contains("has a mesh dim of size 0"),
                       mp::error);
  CHECK_THROWS_WITH_AS(mesh_t::planned({2, 2, 1}, 4),
                       doctest::Contains("rank 4 is not a rank of mesh [x:2, y:2, rest:1]"),
                       mp::error);
}

TEST_CASE("layout search: each candidate priced term by term, ranked, and held to the budget") {
  // a machine with round figures and a line for each group size the candidates use
  mp::machine_model machine;
  machine.source = "test figures";
  machine.gemm_flops_per_second = 1e10;
  machine.stream_bytes_per_second = 4e9;
  const double alpha = 1e-4, beta = 1e-9;
  for (int p : {2, 4}) {
    machine.set(mp::collective::allreduce, p, mp::alpha_beta{alpha, beta});
    machine.set(mp::collective::allgather, p, mp::alpha_beta{alpha, beta});
  }
  // candidates planned on 4 ranks whatever this run has (plans need no ranks)
  auto step = [](const mesh_t& m) { mnist_step(m, std::size_t{4} << 20); };
  mp::layout_search search(machine);
  search.add<mesh_t>("data", {4, 1, 1}, step);
  search.add<mesh_t>("model", {1, 4, 1}, step);
  search.add<mesh_t>("data+model", {2, 2, 1}, step);
  REQUIRE(search.candidates().size() == 3);
  for (const auto& c : search.candidates()) {
    // the price, recomputed here from the plan's own figures
    double communication = 0;
    for (const auto& o : c.steps.operations()) {
      for (const auto& e : o.collectives) {
        if (c.steps.group_size(e.mask) == 1) continue;
        // the only kinds this step makes: the sums, and Adam's updates shared by replicas
        CHECK((e.kind == mp::collective::allreduce || e.kind == mp::collective::allgather));
        communication += static_cast<double>(e.count.calls) * alpha +
                         beta * static_cast<double>(e.count.bytes_sent);
      }
    }
    INFO(c.name << " on " << c.steps.mesh());
    CHECK(c.cost.communication == doctest::Approx(communication).epsilon(1e-12));
    CHECK(c.cost.communication > 0);
    CHECK(c.cost.compute == doctest::Approx(static_cast<double>(c.steps.flops()) / 1e10));
    std::uint64_t streamed = 0;
    for (const auto& o : c.steps.operations()) streamed += o.bytes_streamed;
    CHECK(streamed > 0);
    CHECK(c.cost.passes ==
          doctest::Approx(static_cast<double>(c.cost.bytes_made + streamed) / 4e9));
    CHECK(c.cost.bytes_made == c.steps.bytes_made());
    CHECK(c.fits);
  }
  // ranked fastest first; the winner is the fastest, and the table names its mesh type
  const auto ranked = search.ranked();
  for (std::size_t i = 1; i < ranked.size(); ++i)
    CHECK(ranked[i - 1].cost.total() <= ranked[i].cost.total());
  CHECK(search.best().name == ranked.front().name);
  CHECK(search.table().find("winner: mp::mesh<mp::axes<x, y, rest>, mp::layout<mp::split<batch, "
                            "x>, mp::split<hidden, y>>>") != std::string::npos);
  // a budget only the smallest step fits in: that one wins, however slow
  std::uint64_t smallest = UINT64_MAX;
  std::string smallest_name;
  for (const auto& c : search.candidates()) {
    if (c.cost.bytes_made < smallest) {
      smallest = c.cost.bytes_made;
      smallest_name = c.name;
    }
  }
  mp::layout_search tight(machine, static_cast<double>(smallest));
  tight.add<mesh_t>("data", {4, 1, 1}, step);
  tight.add<mesh_t>("model", {1, 4, 1}, step);
  tight.add<mesh_t>("data+model", {2, 2, 1}, step);
  CHECK(tight.best().name == smallest_name);
  CHECK(tight.table().find("  no\n") != std::string::npos);
  // and one nothing fits in: an error that says how much the smallest needs
  mp::layout_search none(machine, 1.0);
  none.add<mesh_t>("data", {4, 1, 1}, step);
  CHECK_THROWS_WITH_AS(none.best(), doctest::Contains("no candidate fits in"), mp::error);
  CHECK_THROWS_WITH_AS(mp::layout_search(machine).best(),
                       doctest::Contains("no candidate was added"), mp::error);

  // a group size the machine has no figures for is priced by extrapolation, and the table says
  // so before the winner; here every group size has its line
  CHECK(search.extrapolated().empty());
  mp::machine_model only_pairs;
  only_pairs.source = "test figures, pairs only";
  only_pairs.gemm_flops_per_second = 1e10;
  only_pairs.stream_bytes_per_second = 4e9;
  only_pairs.set(mp::collective::allreduce, 2, mp::alpha_beta{alpha, beta});
  only_pairs.set(mp::collective::allgather, 2, mp::alpha_beta{alpha, beta});
  mp::layout_search pairs(only_pairs);
  pairs.add<mesh_t>("data", {4, 1, 1}, step);
  pairs.add<mesh_t>("data+model", {2, 2, 1}, step);
  CHECK(pairs.extrapolated() ==
        "note: allreduce over 4 ranks is priced from the figures of other group sizes; for this "
        "search, calibrate at 4 ranks (mpiexec -n 4 examples/calibrate)\n"
        "note: allgather over 4 ranks is priced from the figures of other group sizes; for this "
        "search, calibrate at 4 ranks (mpiexec -n 4 examples/calibrate)\n");
  CHECK(pairs.table().find(pairs.extrapolated() + "winner: ") != std::string::npos);

  // time_gemm_shapes(): every nonempty shape of every candidate timed once, all together, and
  // every candidate priced again at those rates (passes and communication unchanged)
  const std::size_t shapes = [&] {
    std::vector<mp::gemm_shape> all;
    for (const auto& c : search.candidates())
      for (const auto& g : c.steps.gemms())
        if (g.shape.m > 0 && g.shape.n > 0 && g.shape.k > 0) all.push_back(g.shape);
    std::sort(all.begin(), all.end());
    return static_cast<std::size_t>(std::unique(all.begin(), all.end()) - all.begin());
  }();
  const auto before = search.candidates();
  CHECK(shapes > 3);
  CHECK(search.time_gemm_shapes(1e-5) == shapes);
  CHECK(search.time_gemm_shapes(1e-5) == 0);  // all known now
  for (std::size_t i = 0; i < before.size(); ++i) {
    const auto& c = search.candidates()[i];
    INFO(c.name);
    double compute = 0;
    for (const auto& g : c.steps.gemms()) {
      CHECK(search.machine().has_gemm_rate(g.shape) ==
            (g.shape.m > 0 && g.shape.n > 0 && g.shape.k > 0));
      compute += search.machine().gemm_seconds(g.shape, static_cast<double>(g.calls));
    }
    CHECK(c.cost.compute == doctest::Approx(compute).epsilon(1e-12));
    CHECK(c.cost.compute != before[i].cost.compute);  // the timed rates are not the 1e10 set
    CHECK(c.cost.passes == before[i].cost.passes);
    CHECK(c.cost.communication == before[i].cost.communication);
  }
}

TEST_CASE(
    "layout enumeration: each instantiated layout estimated as its plan, every legal layout "
    "listed") {
  mp::machine_model machine;
  machine.source = "test figures";
  machine.gemm_flops_per_second = 1e10;
  machine.stream_bytes_per_second = 4e9;
  for (int p : {2, 3, 4}) {
    machine.set(mp::collective::allreduce, p, mp::alpha_beta{1e-4, 1e-9});
    machine.set(mp::collective::allgather, p, mp::alpha_beta{1e-4, 1e-9});
  }
  auto step = [](const mesh_t& m) { mnist_step(m, std::size_t{4} << 20); };
  const auto reference = mp::make_plan<mesh_t>({1, 1, 1}, step);
  const mp::layout_enumeration e(reference, machine);
  const std::vector<std::string> dims{"batch", "rows", "cols", "hidden", "classes"};
  const std::vector<std::size_t> sizes{8, 4, 6, 12, 5};
  REQUIRE(e.dims().size() == dims.size());
  for (const auto& name : dims) {
    const auto at = std::find(e.dims().begin(), e.dims().end(), name);
    REQUIRE(at != e.dims().end());
    CHECK(
        e.size(static_cast<std::size_t>(at - e.dims().begin())) ==
        sizes[static_cast<std::size_t>(std::find(dims.begin(), dims.end(), name) - dims.begin())]);
  }
  auto axis_of = [&](int batch_axis, int hidden_axis) {
    return batch_and_hidden_on(e, batch_axis, hidden_axis);
  };
  // the layouts the program instantiated (batch over x, hidden over y) on every shape, uneven
  // ones (3) included: the estimate's flops, gemm calls and collectives are the plan's, exactly
  for (const std::array<int, 3> shape : {std::array{1, 1, 1},
                                         {2, 1, 1},
                                         {1, 2, 1},
                                         {2, 2, 1},
                                         {4, 1, 1},
                                         {1, 4, 1},
                                         {3, 1, 1},
                                         {1, 3, 1},
                                         {2, 1, 2}}) {
    const auto p = mp::make_plan<mesh_t>(shape, step);
    const std::vector<mp::mesh_axis> mesh{{"x", shape[0]}, {"y", shape[1]}, {"rest", shape[2]}};
    const auto c = e.estimate(mesh, axis_of(0, 1));
    INFO("mesh " << p.mesh() << "\n" << p.report());
    CHECK(c.flops == p.flops());
    CHECK(c.collectives.allreduce == p.total(mp::collective::allreduce));
    CHECK(c.collectives.allgather == p.total(mp::collective::allgather));
    CHECK(c.collectives.alltoall == p.total(mp::collective::alltoall));
    const auto exact = mp::predict(p, machine);
    CHECK(c.cost.communication == doctest::Approx(exact.communication).epsilon(1e-9));
    CHECK(c.cost.compute == doctest::Approx(exact.compute).epsilon(1e-9));
    CHECK(e.gemms(mesh, c) == p.gemms());
    // bytes made and streamed scale with the local share of what each operation made: within
    // 15% of the plan's (the plan knows each tensor; the estimate each operation's share)
    CHECK(static_cast<double>(c.cost.bytes_made) ==
          doctest::Approx(static_cast<double>(p.bytes_made())).epsilon(0.15));
  }
  // enumerate over a 2 x 3 mesh: exactly the legal layouts, counted here by brute force from
  // the step's tensors (no tensor with two dims on one mesh dim)
  const std::vector<mp::mesh_axis> mesh{{"x", 2}, {"y", 3}};
  const std::vector<std::vector<std::string>> tensors{{"batch", "rows", "cols"},
                                                      {"rows", "cols", "hidden"},
                                                      {"batch", "hidden"},
                                                      {"hidden", "classes"},
                                                      {"batch", "classes"}};
  auto legal = [&](const std::vector<int>& a) {
    for (const auto& t : tensors) {
      unsigned used = 0;
      for (const auto& name : t) {
        const int axis = a[static_cast<std::size_t>(
            std::find(e.dims().begin(), e.dims().end(), name) - e.dims().begin())];
        if (axis < 0) continue;
        if (used & (1u << axis)) return false;
        used |= 1u << axis;
      }
    }
    return true;
  };
  std::size_t count = 0;
  for (int code = 0; code < 243; ++code) {  // 3^5: each dim on x, on y, or not split
    std::vector<int> a;
    for (int d = 0, c = code; d < 5; ++d, c /= 3) a.push_back(c % 3 - 1);
    count += legal(a) ? 1 : 0;
  }
  const auto ranked = e.enumerate(mesh);
  CHECK(ranked.size() == count);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    CHECK(legal(ranked[i].axis_of_dim));
    if (i) CHECK(ranked[i - 1].cost.total() <= ranked[i].cost.total());
    const auto again = e.estimate(mesh, ranked[i].axis_of_dim);
    CHECK(again.cost.total() == ranked[i].cost.total());
  }
  // over 2 x 2, of two layouts that differ by swapping x and y only one is listed: half of
  // the legal ones, plus the one that splits nothing (its own swap)
  const std::vector<mp::mesh_axis> square{{"x", 2}, {"y", 2}};
  const auto halved = e.enumerate(square);
  CHECK(halved.size() == (count + 1) / 2);
  for (const auto& c : halved) {
    auto swapped = c.axis_of_dim;
    for (int& a : swapped) a = a < 0 ? a : 1 - a;
    const auto twin = std::count_if(halved.begin(), halved.end(),
                                    [&](const auto& o) { return o.axis_of_dim == swapped; });
    CHECK(twin == (swapped == c.axis_of_dim ? 1 : 0));
  }
  const auto table = e.table(mesh, ranked, 5);
  CHECK(table.find("winner: " + e.code(mesh, ranked.front())) != std::string::npos);
  // timing the top candidates' gemm shapes: afterwards the top ones make no untimed shape (a
  // candidate that climbs on the one sgemm rate is timed too), every candidate is priced at the
  // rates now known, and the list is ranked again
  auto timed = e;
  auto retimed = ranked;
  CHECK(timed.time_gemm_shapes(mesh, retimed, 3, 1e-5) > 0);
  CHECK(retimed.size() == ranked.size());
  for (std::size_t i = 0; i < retimed.size(); ++i) {
    if (i < 3) {
      for (const auto& g : timed.gemms(mesh, retimed[i]))
        CHECK(timed.machine().has_gemm_rate(g.shape));
    }
    if (i) CHECK(retimed[i - 1].cost.total() <= retimed[i].cost.total());
    CHECK(timed.estimate(mesh, retimed[i].axis_of_dim).cost.total() == retimed[i].cost.total());
  }
  CHECK(timed.time_gemm_shapes(mesh, retimed, 3, 1e-5) == 0);  // nothing left to time
  const auto data = e.estimate(mesh, axis_of(0, -1));
  CHECK(e.code(mesh, data) == "mp::mesh<mp::axes<x, y>, mp::layout<mp::split<batch, x>>>");
  // the rules of rename and of softmax over a split dim, against plans of seq_step
  const mp::layout_enumeration seq(mp::make_plan<seq_mesh_t>({1, 1}, seq_step), machine);
  for (const std::array<int, 2> shape :
       {std::array{2, 1}, {1, 2}, {2, 2}, {3, 2}, {4, 1}, {1, 4}}) {
    const auto p = mp::make_plan<seq_mesh_t>(shape, seq_step);
    const std::vector<mp::mesh_axis> grid{{"x", shape[0]}, {"y", shape[1]}};
    std::vector<int> axis;
    for (const auto& d : seq.dims())
      axis.push_back(d == "length" ? 0 : d == "memory_length" ? 1 : -1);
    const auto c = seq.estimate(grid, axis);
    INFO("mesh " << p.mesh() << "\n" << p.report());
    CHECK(c.flops == p.flops());
    CHECK(c.collectives.allreduce == p.total(mp::collective::allreduce));
    CHECK(c.collectives.allgather == p.total(mp::collective::allgather));
    CHECK(c.collectives.alltoall == p.total(mp::collective::alltoall));
  }
  // with plain SGD the update rows make nothing, yet each names its variable (its layout,
  // recorded first): the gradients are still found and bucketed in one allreduce
  {
    const auto sgd_reference =
        mp::make_plan<mesh_t>({1, 1, 1}, [](const mesh_t& m) { mnist_step(m, 4 << 20, true); });
    const mp::layout_enumeration plain(sgd_reference, machine);
    for (const auto& o : sgd_reference.operations()) {
      if (o.name.starts_with("update ")) {
        CHECK(o.bytes_made == 0);
        CHECK(o.layouts.size() == 1);
      }
    }
    const auto p =
        mp::make_plan<mesh_t>({2, 1, 1}, [](const mesh_t& m) { mnist_step(m, 4 << 20, true); });
    std::vector<int> a;
    for (const auto& d : plain.dims()) a.push_back(d == "batch" ? 0 : d == "hidden" ? 1 : -1);
    const auto c = plain.estimate({{"x", 2}, {"y", 1}}, a);
    INFO("plan:\n"
         << p.report() << "estimated: " << c.collectives.allreduce.calls << " calls, "
         << c.collectives.allreduce.values << " values");
    CHECK(c.collectives.allreduce == p.total(mp::collective::allreduce));
    // the mean and one bucket; the logits' sum over y (of 1) is a group of one rank, which
    // counts nothing
    CHECK(c.collectives.allreduce.calls == 2);
  }
  INFO("unpriced: " << (e.unpriced().empty() ? "" : e.unpriced().front()));
  CHECK(e.unpriced().empty());  // every row that communicates has a rule
  // what it refuses: a mesh no meshpp mesh can be, a layout a compiled one cannot be
  CHECK_THROWS_WITH_AS(e.enumerate({}), doctest::Contains("a mesh has 1 to 8 dims; got 0"),
                       mp::error);
  CHECK_THROWS_WITH_AS(e.enumerate({{"x", 0}}), doctest::Contains("mesh dim x has size 0"),
                       mp::error);
  CHECK_THROWS_WITH_AS(e.enumerate({{"x", 2}, {"x", 2}}),
                       doctest::Contains("mesh dim x named twice"), mp::error);
  CHECK_THROWS_WITH_AS(e.enumerate({{"hidden", 2}}),
                       doctest::Contains("mesh dim hidden has the name of a dim of the model"),
                       mp::error);
  CHECK_THROWS_WITH_AS(e.estimate(mesh, axis_of(0, 0)),
                       doctest::Contains("dims batch and hidden of one tensor (or einsum) are both "
                                         "split over mesh dim x"),
                       mp::error);
  // what it refuses: a reference on more than one rank, a layout of the wrong length or mesh dim
  CHECK_THROWS_WITH_AS(mp::layout_enumeration(mp::make_plan<mesh_t>({2, 1, 1}, step), machine),
                       doctest::Contains("must be of a mesh of one rank"), mp::error);
  CHECK_THROWS_WITH_AS(e.estimate(mesh, {0}),
                       doctest::Contains("1 mesh dims given for 5 model dims"), mp::error);
  CHECK_THROWS_WITH_AS(e.estimate(mesh, axis_of(2, -1)),
                       doctest::Contains("dim batch is on mesh dim 2 of a mesh of 2"), mp::error);
}

TEST_CASE("plan drawn per operation: the layouts of the tensors each operation made") {
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const auto p = mp::make_plan<mesh_t>(
        shape, [&](const mesh_t& m) { mnist_step(m, 0); }, world().rank());
    CAPTURE(p.mesh());
    // the first layer's product: [batch, hidden], batch over x (mesh dim 0), hidden over y (1)
    std::size_t first = p.operations().size();
    for (std::size_t i = 0; i < p.operations().size() && first == p.operations().size(); ++i) {
      const auto& o = p.operations()[i];
      if (o.phase == "forward" && o.name.starts_with("einsum [batch, rows, cols]")) first = i;
    }
    REQUIRE(first < p.operations().size());
    const mp::tensor_layout want{"float", {"batch", "hidden"}, {8, 12}, {0, 1}};
    CHECK_ALL_RANKS(p.operations()[first].layouts == std::vector<mp::tensor_layout>{want});
    const auto pictures = p.pictures(first);
    REQUIRE(pictures.size() == 1);
    CHECK(pictures[0].title ==
          "forward: " + p.operations()[first].name + ": tensor<float> [batch:8, hidden:12]");
    CHECK(pictures[0].mesh_dim_names == std::vector<std::string>{"x", "y", "rest"});
    CHECK(pictures[0].mesh_sizes == std::vector<int>(shape.begin(), shape.end()));
    // the drawing: one block per (x, y) coordinate, each with its ranges (near-equal stripes
    // where x or y does not divide 8 or 12)
    const std::string svg = p.draw(first);
    std::size_t blocks = 0;
    for (auto at = svg.find("class=\"block\""); at != std::string::npos;
         at = svg.find("class=\"block\"", at + 1))
      ++blocks;
    CHECK(blocks == static_cast<std::size_t>(shape[0] * shape[1]));
    const auto px = static_cast<std::size_t>(shape[0]);
    for (std::size_t r = 0; r < px; ++r) {
      const std::size_t b0 = r * (8 / px) + std::min(r, 8 % px);
      const std::size_t b1 = b0 + 8 / px + (r < 8 % px ? 1 : 0);
      CHECK(svg.find("data-range=\"batch " + std::to_string(b0) + ":" + std::to_string(b1) +
                     ", hidden ") != std::string::npos);
    }
    // every operation that made a tensor draws; a wrong index names the plan's size
    for (std::size_t i = 0; i < p.operations().size(); ++i) {
      if (!p.operations()[i].layouts.empty()) CHECK_NOTHROW((void)p.draw(i));
    }
    CHECK(meshpp_test::throws_with<mp::error>([&] { (void)p.pictures(p.operations().size()); },
                                              {"meshpp::plan::pictures: operation"}));
  }
}

TEST_CASE(
    "layout enumeration: a user's operation that describes itself as an einsum is planned and "
    "priced as einsum's") {
  mp::machine_model machine;
  machine.source = "test figures";
  machine.gemm_flops_per_second = 1e10;
  machine.stream_bytes_per_second = 4e9;
  for (int p : {2, 3, 4}) machine.set(mp::collective::allreduce, p, mp::alpha_beta{1e-4, 1e-9});
  auto planned = [&](product_by by) {
    return mp::make_plan<mesh_t>({1, 1, 1}, [&](const mesh_t& m) { second_layer(m, by); });
  };
  const auto by_einsum = planned(product_by::einsum), described = planned(product_by::described),
             named = planned(product_by::named);
  // the row the enumeration reads is the descriptor's: its kind and dims, not its name
  const auto row = [](const mp::plan& p) {
    const auto& ops = p.operations();
    const auto it = std::find_if(ops.begin(), ops.end(), [](const mp::operation_count& o) {
      return o.name == "user product" || o.name.starts_with("einsum ");
    });
    REQUIRE(it != ops.end());
    return *it;
  };
  CHECK(row(by_einsum).kind == mp::operation_kind::einsum);
  CHECK(row(by_einsum).dims == row(described).dims);
  CHECK(row(described).kind == mp::operation_kind::einsum);
  CHECK(row(named).kind == mp::operation_kind::other);
  CHECK(row(named).dims.empty());
  const mp::layout_enumeration from_einsum(by_einsum, machine), from_described(described, machine),
      from_named(named, machine);
  bool named_differs = false;
  for (const std::array<int, 3> shape : {std::array{1, 2, 1}, {2, 2, 1}, {1, 4, 1}, {3, 1, 1}}) {
    const std::vector<mp::mesh_axis> mesh{{"x", shape[0]}, {"y", shape[1]}, {"rest", shape[2]}};
    const auto a = from_einsum.estimate(mesh, batch_and_hidden_on(from_einsum, 0, 1));
    const auto b = from_described.estimate(mesh, batch_and_hidden_on(from_described, 0, 1));
    INFO("mesh " << shape[0] << " x " << shape[1] << " x " << shape[2]);
    CHECK(b.flops == a.flops);
    CHECK(b.collectives.allreduce == a.collectives.allreduce);
    CHECK(b.cost.compute == doctest::Approx(a.cost.compute).epsilon(1e-12));
    CHECK(b.cost.communication == doctest::Approx(a.cost.communication).epsilon(1e-12));
    CHECK(from_described.gemms(mesh, b) == from_einsum.gemms(mesh, a));
    // and as the real einsum's own plan on that mesh has it
    const auto exact =
        mp::make_plan<mesh_t>(shape, [&](const mesh_t& m) { second_layer(m, product_by::einsum); });
    CHECK(b.flops == exact.flops());
    CHECK(b.collectives.allreduce == exact.total(mp::collective::allreduce));
    // a user's operation that only names itself is priced as what it counted, unscaled
    const auto c = from_named.estimate(mesh, batch_and_hidden_on(from_named, 0, 1));
    named_differs = named_differs || c.flops != a.flops;
  }
  CHECK(named_differs);
  // a descriptor with fewer dim lists than its kind takes, or a row dim its operand lacks, is
  // an error naming the operation, not a row priced wrong
  auto described_as = [&](mp::operation_kind kind, std::vector<std::vector<std::string>> dims,
                          std::string over) {
    return mp::make_plan<mesh_t>({1, 1, 1}, [&](const mesh_t& m) {
      const auto scope = m.counters().operation([&] {
        auto d = mp::named_operation("user step");
        d.kind = kind;
        d.dims = dims;
        d.over = over;
        return d;
      });
      (void)mp::zeros<float, batch, classes>(m, mp::extents{batch{} = 8, classes{} = 5});
    });
  };
  CHECK_THROWS_WITH_AS(
      mp::layout_enumeration(
          described_as(mp::operation_kind::einsum, {{"batch", "hidden"}, {"batch", "hidden"}}, ""),
          machine),
      "meshpp::layout_enumeration: operation 'user step' (forward) gives 2 lists of dims; its "
      "kind takes 3 (operation_descriptor::dims: its operands', then its result's)",
      mp::error);
  CHECK_THROWS_WITH_AS(
      mp::layout_enumeration(
          described_as(mp::operation_kind::softmax, {{"batch", "classes"}}, "hidden"), machine),
      "meshpp::layout_enumeration: operation 'user step' (forward) runs along 'hidden', which is "
      "not a dim of its operand",
      mp::error);
  // its twin, well described, is read
  CHECK_NOTHROW(mp::layout_enumeration(
      described_as(mp::operation_kind::softmax, {{"batch", "classes"}}, "classes"), machine));
  // an operation that communicates and that no rule prices is named by unpriced(), by its
  // kind (not its name): sums that complete gradients (gradient_sums) are priced with them
  auto summing_as = [&](mp::operation_kind kind) {
    return mp::make_plan<mesh_t>({1, 1, 1}, [&](const mesh_t& m) {
      const auto scope = m.counters().operation([&] {
        auto d = mp::named_operation("gradient buckets");
        d.kind = kind;
        return d;
      });
      std::vector<float> sums(8);
      mp::allreduce<mp::over<y>>::run(m, std::span<float>(sums));
    });
  };
  const mp::layout_enumeration other(summing_as(mp::operation_kind::other), machine),
      gradient_sums(summing_as(mp::operation_kind::gradient_sums), machine);
  REQUIRE(other.unpriced().size() == 1);
  CHECK(other.unpriced().front() == "forward gradient buckets");
  CHECK(gradient_sums.unpriced().empty());
}
