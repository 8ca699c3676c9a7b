// two_layer: the Mesh-TensorFlow paper's two fully-connected layers (section 8), forward and
// backward, under each of the five layouts of its Table 1 that fit the number of ranks n:
//
//   []                                   mesh all:n
//   [batch:all]                          mesh all:n          data-parallel
//   [hidden:all]                         mesh all:n          model-parallel
//   [batch:rows, hidden:cols]            rows x cols = n, as square as possible
//   [batch:rows, hidden:cols, io:planes] most cubic rows x cols x planes = n
//
// For each it counts the values allreduced per processor (the paper's measure; exact
// formulas in docs/table1.md), checks every output and gradient against a
// single-rank computation without the mesh (on rank 0), and times the step.
//
//   mpiexec -n 4 --oversubscribe build/examples/two_layer [--batch 128 --io 256 --hidden 1024]
//   [--reps 3] [--json] [--autodiff]
//
// --autodiff takes the backward pass from the gradient machinery (vjp, autodiff/) instead of
// the hand-written one: the counted values must be the same, exactly.
//
// The program is the same for every layout: only the mesh type changes.
#include "two_layer.hpp"

#include "cli.hpp"

#include <array>

template <class Mesh>
std::string mesh_text(const Mesh& m) {
  std::string out;
  for (std::size_t i = 0; i < Mesh::ndims; ++i) {
    out += i ? ";" : "";
    out += Mesh::names()[i];
    out += ':';
    out += std::to_string(m.sizes()[i]);
  }
  return out;
}

template <class Mesh>
void report(const Mesh& mesh, const options& o, const reference* ref) {
  const result r = run(mesh, o, ref);
  if (mesh.rank() != 0) return;
  const std::string layout = mp::to_string(typename Mesh::rules{});
  if (o.json) {
    std::printf(
        "{\"layout\": \"%s\", \"mesh\": \"%s\", \"b\": %zu, \"d_io\": %zu, \"d_h\": %zu, "
        "\"values_allreduced\": %llu, \"values_allreduced_forward\": %llu, "
        "\"max_abs_diff\": %.3g, \"seconds\": %.6f}\n",
        layout.c_str(), mesh_text(mesh).c_str(), o.b, o.d_io, o.d_h,
        static_cast<unsigned long long>(r.values_allreduced),
        static_cast<unsigned long long>(r.values_allreduced_forward), r.max_abs_diff, r.seconds);
  } else {
    std::printf("%-34s %-22s %14llu %14llu %12.3g %10.4f\n", layout.empty() ? "[]" : layout.c_str(),
                mesh_text(mesh).c_str(), static_cast<unsigned long long>(r.values_allreduced),
                static_cast<unsigned long long>(r.values_allreduced_forward), r.max_abs_diff,
                r.seconds);
  }
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  options o;
  examples::cli cli("two_layer",
                    "the paper's two-layer network under five layouts: values allreduced per "
                    "processor (Table 1)");
  cli.add("--batch", o.b, "the batch size b");
  cli.add("--io", o.d_io, "the input and output width d_io");
  cli.add("--hidden", o.d_h, "the hidden width d_h");
  cli.add("--reps", o.reps, "timed repetitions per layout");
  cli.add("--json", o.json, "one JSON line per layout on stdout instead of the table");
  cli.add("--autodiff", o.autodiff, "the backward pass from vjp() instead of written by hand");
  cli.parse(argc, argv);
  const int n = boost::mpi::communicator().size();
  // The reference is computed once, on rank 0 only.
  std::optional<reference> ref;
  if (boost::mpi::communicator().rank() == 0) ref.emplace(o);
  if (!o.json && boost::mpi::communicator().rank() == 0) {
    std::printf(
        "two fully-connected layers, b=%zu d_io=%zu d_h=%zu, %d ranks: values allreduced "
        "per processor, forward+backward and forward alone\n",
        o.b, o.d_io, o.d_h, n);
    std::printf("%-34s %-22s %14s %14s %12s %10s\n", "layout", "mesh", "fwd+bwd", "forward",
                "max|diff|", "seconds");
  }
  const reference* r = ref ? &*ref : nullptr;
  report(mesh_replicated({n}), o, r);
  report(mesh_data({n}), o, r);
  report(mesh_model({n}), o, r);
  report(mesh_2d(mp::balanced_grid<2>(n)), o, r);
  report(mesh_3d(mp::balanced_grid<3>(n)), o, r);
  return 0;
}
