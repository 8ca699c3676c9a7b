// plan: what one training step of the README's Fashion-MNIST network (batch 100, 784 -> 1024 ->
// 10, Adam) will communicate, compute and allocate per rank under its three layouts, before
// anything runs (docs/plans.md). No data and no communication: one process plans any mesh.
//
//   build/examples/plan                        # 4 ranks: data [4], model [4], data+model [2, 2]
//   build/examples/plan --ranks 8 --report data+model
//   mpiexec -n 2 build/examples/plan --ranks 2 --check
//   build/examples/plan --ranks 3 --draw plan_svg
//
// --report LAYOUT prints that layout's plan operation by operation. --draw DIR draws each
// operation's layouts (the tensors it made, which rank holds which block) to
// DIR/LAYOUT/NN.svg, NN the operation's row in the report. --check (under mpiexec with
// --ranks ranks) also runs each step for real and compares the plan with the counters of the
// run, per operation, on every rank: it prints "plan == counters" or exits non-zero.
// Then the layout search (docs/plans.md, "Layout search") ranks the layouts, data+model on every
// mesh shape of the ranks, by the price of their plans on the machine model in --machine FILE
// (default meshpp-machine.txt, from examples/calibrate; built-in defaults without it). Last,
// every legal layout of the step's dims over the same mesh shapes, estimated without compiling
// them (docs/plans.md, "Every layout, estimated"): the top five of each and the one to paste.
#include <meshpp/meshpp.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/operations.hpp>

#include "cli.hpp"

#include <meshpp/plan/choice.hpp>
#include <meshpp/plan/enumerate.hpp>
#include <meshpp/plan/search.hpp>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
// mesh dims
MESHPP_DIM(all);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

using mesh_data = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using mesh_model = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using mesh_data_model =
    mp::mesh<mp::axes<processor_rows, processor_cols>,
             mp::layout<mp::split<batch, processor_rows>, mp::split<hidden, processor_cols>>>;

struct options {
  int ranks = 4;
  std::size_t batch = 100, hidden = 1024;
  std::string report;  // a layout whose plan to print whole
  bool check = false;
  std::string machine = "meshpp-machine.txt";
  std::string draw;  // a directory: each operation's layouts drawn there, one SVG an operation
};

// one training step, as examples/mnist trains (images and labels made here: a plan reads none)
template <class Mesh>
void step(const Mesh& m, const options& o) {
  const auto sizes =
      mp::extents{batch{} = o.batch, rows{} = 28, cols{} = 28, hidden{} = o.hidden, classes{} = 10};
  mp::variable w1(mp::random_uniform<float, rows, cols, hidden>(m, sizes, 1, -0.05f, 0.05f), "w1");
  mp::variable w2(mp::random_uniform<float, hidden, classes>(m, sizes, 2, -0.05f, 0.05f), "w2");
  mp::adam opt(mp::adam_options{}, w1, w2);
  const auto images = mp::random_uniform<float, batch, rows, cols>(m, sizes, 3, 0.0f, 1.0f);
  using labels_t = mp::tensor_of<std::int32_t, mp::shape<batch>, Mesh>;
  const auto labels = mp::generate<labels_t>(
      m, sizes, [](const auto& i) { return static_cast<std::int32_t>(i[0] % 10); });
  const auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(images, w1));
  const auto logits = mp::einsum<mp::shape<batch, classes>>(h, w2);
  mp::backward(mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits, labels)));
  opt.step();
}

// The README's three layouts, chosen at run time (meshpp/plan/choice.hpp)
using layouts = mp::mesh_choice<mp::named<"data", mesh_data>, mp::named<"model", mesh_model>,
                                mp::named<"data+model", mesh_data_model>>;

// plans one layout on rank 0 of the mesh, prints its line of the summary (and its whole plan
// if asked); with --check, runs the step for real and compares on every rank
bool plan_layout(const mp::mesh_pick& pick, const options& o, bool talk) {
  const auto one_step = [&](const auto& m) { step(m, o); };
  const auto p = layouts::plan_of(pick, one_step);
  const auto ar = p.total(mp::collective::allreduce);
  const auto ag = p.total(mp::collective::allgather);  // Adam's updates shared by replicas
  if (talk)
    std::printf(
        "%-11s %-42s %9llu %9llu %11llu %9llu %11llu %10.4g %9.1f\n", pick.name.c_str(),
        p.mesh().c_str(), static_cast<unsigned long long>(ar.calls),
        static_cast<unsigned long long>(ar.values), static_cast<unsigned long long>(ar.bytes_sent),
        static_cast<unsigned long long>(ag.calls), static_cast<unsigned long long>(ag.bytes_sent),
        static_cast<double>(p.flops()), static_cast<double>(p.bytes_made()) / (1 << 20));
  if (talk && o.report == pick.name) std::printf("\n%s\n", p.report().c_str());
  if (talk && !o.draw.empty()) {  // DIR/LAYOUT/NN.svg for operation NN, if it made tensors
    const std::filesystem::path dir = std::filesystem::path(o.draw) / pick.name;
    std::filesystem::create_directories(dir);
    int drawn = 0;
    for (std::size_t i = 0; i < p.operations().size(); ++i) {
      if (p.operations()[i].layouts.empty()) continue;
      char file[32];
      std::snprintf(file, sizeof file, "%02zu.svg", i);
      mp::write_svg(dir / file, p.draw(i));
      ++drawn;
    }
    std::printf("%12s %d operations drawn in %s\n", "", drawn, dir.string().c_str());
  }
  if (!o.check) return true;
  return layouts::run(pick, [&](const auto& real) {
    real.counters().by_operation(true);
    step(real, o);
    const auto mine = layouts::plan_of(pick, one_step, real.rank());
    const int same = mine.operations() == real.counters().operations() ? 1 : 0;
    return boost::mpi::all_reduce(real.world(), same, boost::mpi::minimum<int>()) == 1;
  });
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    options o;
    examples::cli cli("plan",
                      "plans of the MNIST training step under each layout, without running it");
    cli.add("--ranks", o.ranks, "the ranks to plan for", "P");
    cli.add("--batch", o.batch, "examples per step");
    cli.add("--hidden", o.hidden, "the hidden layer's width");
    cli.add("--report", o.report, "a layout whose plan to print whole", "LAYOUT");
    cli.add("--draw", o.draw, "a directory: each operation's layouts drawn there", "DIR");
    cli.add("--machine", o.machine, "the machine model the plans are priced on", "FILE");
    cli.add("--check", o.check, "run each step too and compare its counters with the plan");
    cli.parse(argc, argv);
    if (o.ranks < 1) cli.fail("--ranks must be at least 1");
    const bool talk = boost::mpi::communicator().rank() == 0;
    if (talk) {
      std::printf("plan of one training step (batch %zu, hidden %zu, Adam), per rank:\n", o.batch,
                  o.hidden);
      std::printf("%-11s %-42s %9s %9s %11s %9s %11s %10s %9s\n", "layout", "mesh", "allreduce",
                  "values", "bytes sent", "allgather", "bytes sent", "flops", "MiB made");
    }
    bool ok = true;
    for (const auto& name : layouts::names())
      ok = plan_layout(layouts::fitted(name, o.ranks), o, talk) && ok;
    if (o.check && talk) std::printf(ok ? "plan == counters\n" : "plan != counters\n");
    if (!ok) return 1;
    // the search: every layout on every mesh shape of the ranks, priced
    mp::layout_search search(mp::machine_model::load_or_defaults(o.machine));
    layouts::add_to(search, o.ranks, [&](const auto& m) { step(m, o); });
    if (talk) {
      std::printf("\nlayout search, priced on %s\n%s", search.machine().source.c_str(),
                  search.table().c_str());
    }
    // and every layout of the step's dims, compiled or not, estimated from its plan on one rank
    mp::layout_enumeration layouts(
        mp::make_plan<mesh_data>({1}, [&](const mesh_data& m) { step(m, o); }),
        mp::machine_model::load_or_defaults(o.machine));
    std::vector<std::vector<mp::mesh_axis>> meshes{{{"all", o.ranks}}};
    for (int r = 2; r < o.ranks; ++r)
      if (o.ranks % r == 0)
        meshes.push_back({{"processor_rows", r}, {"processor_cols", o.ranks / r}});
    const auto report = mp::enumeration_report(layouts, meshes, 5);
    if (talk) std::printf("\n%s", report.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
