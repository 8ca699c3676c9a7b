// checkpoint_run: checkpoints across rank counts and across a killed job, as steps of CTest
// fixtures and cmake/meshppCheckpointKill.cmake (tests/CMakeLists.txt):
//
//   checkpoint_run save FILE LAYOUT   tensors and, per optimizer (adam, sgd, adafactor), a small
//                                     model trained 3 steps: FILE.<kind>.h5; then 3 more steps,
//                                     the gathered weights before and after them (rank 0, raw
//                                     floats) in FILE.<kind>.ref, from this uninterrupted run
//   checkpoint_run load FILE LAYOUT   into differently initialised tensors and models under
//                                     LAYOUT at this rank count: the tensors equal the global
//                                     formula bit for bit, the weights FILE.<kind>.ref's first
//                                     part bit for bit, and after 3 more steps its second part
//                                     to 1e-5 (so the optimizer's state came along)
//   checkpoint_run kill FILE          saves a good checkpoint (values k = 1), then another
//                                     (k = 2) during which the last rank kills itself with
//                                     SIGKILL after the second dataset
//   checkpoint_run survived FILE      a temporary file of the killed save is there, and FILE
//                                     loads with the values of the good one (k = 1)
//
// LAYOUT picks the mesh [x, y, z] under the rules rows:x, cols:y: rows (n, 1, 1), cols
// (1, n, 1), both (balanced 2-D grid), none (1, 1, n: replicated). Exit status 0 when every
// check passed on every rank.
#include <meshpp/io/checkpoint.hpp>
#include <meshpp/meshpp.hpp>

#include <boost/mpi/collectives/all_reduce.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {

using mesh_t = mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<rows, x>, mp::split<cols, y>>>;
const auto sizes = mp::extents{batch{} = 4, rows{} = 8, cols{} = 12};
using grid_t = mp::tensor_of<float, mp::shape<rows, cols>, mesh_t>;
using counts_t = mp::tensor_of<std::int32_t, mp::shape<cols>, mesh_t>;
using replicated_t = mp::tensor_of<double, mp::shape<rows>, mesh_t>;

mesh_t make_mesh(const std::string& layout) {
  const int n = boost::mpi::communicator().size();
  if (layout == "rows") return mesh_t({n, 1, 1});
  if (layout == "cols") return mesh_t({1, n, 1});
  if (layout == "none") return mesh_t({1, 1, n});
  if (layout == "both") {
    const auto g = mp::balanced_grid<2>(n);
    return mesh_t({g[0], g[1], 1});
  }
  throw mp::error("checkpoint_run: LAYOUT must be rows, cols, both or none, not '" + layout + "'");
}

// tensors of a formula of the global index (tests/python/checkpoint_h5py.py knows it too)
struct tensors {
  grid_t grid;
  counts_t counts;
  replicated_t replicated;
  tensors(const mesh_t& m, int k)
      : grid(mp::generate<grid_t>(m, sizes,
                                  [k](const auto& i) {
                                    return 0.5f * static_cast<float>(i[0]) +
                                           0.25f * static_cast<float>(i[1]) + k;
                                  })),
        counts(mp::generate<counts_t>(
            m, sizes, [k](const auto& i) { return static_cast<std::int32_t>(i[0] * 1000 + k); })),
        replicated(mp::generate<replicated_t>(
            m, sizes, [k](const auto& i) { return -1.5 * static_cast<double>(i[0]) + k; })) {}
  void add_to(mp::checkpoint& c) {
    c.add("grid", grid).add("nested/counts", counts).add("replicated", replicated);
  }
  bool operator==(const tensors& o) const {
    return grid.local() == o.grid.local() && counts.local() == o.counts.local() &&
           replicated.local() == o.replicated.local();
  }
};

// loss = mean((x w + b)^2) + mean(w^2), w [rows, cols], x [batch, rows]
struct model {
  using x_t = mp::tensor_of<float, mp::shape<batch, rows>, mesh_t>;
  mp::variable<grid_t> w;
  mp::variable<mp::tensor_of<float, mp::shape<cols>, mesh_t>> b;
  x_t x;
  std::unique_ptr<mp::optimizer> opt;
  model(const mesh_t& m, std::uint64_t seed, const std::string& kind)
      : w(mp::random_normal<grid_t>(m, sizes, seed), "w"),
        b(mp::random_normal<mp::tensor_of<float, mp::shape<cols>, mesh_t>>(m, sizes, seed + 1),
          "b"),
        x(mp::random_normal<x_t>(m, sizes, 99)) {
    if (kind == "adam")
      opt = std::make_unique<mp::adam>(mp::adam_options{.learning_rate = 0.05}, w, b);
    else if (kind == "sgd")
      opt =
          std::make_unique<mp::sgd>(mp::sgd_options{.learning_rate = 0.05, .momentum = 0.9}, w, b);
    else
      opt = std::make_unique<mp::adafactor>(
          mp::adafactor_options{.beta1 = 0.9, .min_dim_size_to_factor = 4}, w, b);
  }
  void step() {
    auto h = mp::einsum<mp::shape<batch, cols>>(x, w) + b;
    auto loss = mp::reduce_mean(h * h) + mp::reduce_mean(w * w);
    mp::backward(loss);
    opt->step();
  }
  void add_to(mp::checkpoint& c) { c.add(w, b).add(*opt); }
};

const char* const kinds[] = {"adam", "sgd", "adafactor"};

std::vector<float> gathered(const grid_t& t) {
  const auto whole = mp::gather(t);
  return {whole.begin(), whole.end()};
}

// everywhere(ok): ok on every rank
bool everywhere(bool ok) {
  bool all = false;
  boost::mpi::all_reduce(boost::mpi::communicator(), ok, all, std::logical_and<bool>());
  return all;
}

bool report(bool ok, const std::string& what) {
  ok = everywhere(ok);
  if (boost::mpi::communicator().rank() == 0)
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  return ok;
}

int save(const std::string& file, const std::string& layout) {
  const mesh_t m = make_mesh(layout);
  for (const char* kind : kinds) {
    tensors t(m, 0);
    model net(m, 1, kind);
    for (int s = 0; s < 3; ++s) net.step();
    std::int64_t step = 3;
    mp::checkpoint c;
    t.add_to(c);
    net.add_to(c);
    c.add("step", step);
    mp::save(file + "." + kind + ".h5", m, c);
    std::vector<float> reference = gathered(net.w.value());
    for (int s = 0; s < 3; ++s) net.step();
    const auto after = gathered(net.w.value());
    reference.insert(reference.end(), after.begin(), after.end());
    if (m.rank() == 0) {
      std::ofstream out(file + "." + kind + ".ref", std::ios::binary);
      out.write(reinterpret_cast<const char*>(reference.data()),
                static_cast<std::streamsize>(reference.size() * sizeof(float)));
    }
    if (m.rank() == 0)
      std::printf("saved %s.%s.h5 under %s on %d ranks\n", file.c_str(), kind, m.describe().c_str(),
                  m.size());
  }
  return 0;
}

int load(const std::string& file, const std::string& layout) {
  const mesh_t m = make_mesh(layout);
  bool ok = true;
  for (const char* kind : kinds) {
    tensors t(m, 7);  // other values, to be overwritten
    model net(m, 40, kind);
    std::int64_t step = 0;
    mp::checkpoint c;
    t.add_to(c);
    net.add_to(c);
    c.add("step", step);
    mp::load(file + "." + kind + ".h5", m, c);
    const std::string where =
        std::string(kind) + " under " + m.describe() + " on " + std::to_string(m.size()) + " ranks";
    ok &= report(t == tensors(m, 0), "tensors equal the saved ones, " + where);
    ok &= report(step == 3 && net.opt->steps() == 3, "scalars and step count, " + where);
    std::vector<float> reference(2 * 8 * 12);
    std::ifstream in(file + "." + kind + ".ref", std::ios::binary);
    in.read(reinterpret_cast<char*>(reference.data()),
            static_cast<std::streamsize>(reference.size() * sizeof(float)));
    const bool read = in.gcount() == static_cast<std::streamsize>(reference.size() * sizeof(float));
    const auto now = gathered(net.w.value());
    ok &= report(read && std::equal(now.begin(), now.end(), reference.begin()),
                 "weights equal the saved ones bit for bit, " + where);
    for (int s = 0; s < 3; ++s) net.step();
    const auto after = gathered(net.w.value());
    double worst = 0;
    for (std::size_t i = 0; i < after.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(after[i]) - reference[96 + i]) /
                                  (1 + std::abs(static_cast<double>(reference[96 + i]))));
    ok &= report(read && worst <= 1e-5, "3 more steps match the uninterrupted run (worst " +
                                            std::to_string(worst) + "), " + where);
  }
  return ok ? 0 : 1;
}

void kill_last_rank(const std::string& dataset) {
  static int written = 0;
  const boost::mpi::communicator world;
  if (++written == 2 && world.rank() == world.size() - 1) {
    std::printf("rank %d: killing itself after writing %s\n", world.rank(), dataset.c_str());
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
}

int kill(const std::string& file) {
  const mesh_t m = make_mesh("both");
  {
    tensors t(m, 1);
    std::int64_t step = 1;
    mp::checkpoint c;
    t.add_to(c);
    c.add("step", step);
    mp::save(file, m, c);
  }
  tensors t(m, 2);
  std::int64_t step = 2;
  mp::checkpoint c;
  t.add_to(c);
  c.add("step", step);
  mp::detail::hdf5::save_visitor::after_dataset_hook = kill_last_rank;
  mp::save(file, m, c);
  std::printf("the save that should have been killed finished\n");
  return 0;
}

int survived(const std::string& file) {
  const mesh_t m = make_mesh("rows");
  bool temporary = false;
  const std::filesystem::path p(file);
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path()))
    temporary |= e.path().filename().string().rfind(p.filename().string() + ".tmp.", 0) == 0;
  bool ok = report(temporary, "the killed save left its temporary file");
  tensors t(m, 9);
  std::int64_t step = 0;
  mp::checkpoint c;
  t.add_to(c);
  c.add("step", step);
  mp::load(file, m, c);
  ok &= report(t == tensors(m, 1) && step == 1,
               "the checkpoint before the killed save loads, with its values");
  m.world().barrier();
  if (m.rank() == 0) {
    for (const auto& e : std::filesystem::directory_iterator(p.parent_path()))
      if (e.path().filename().string().rfind(p.filename().string() + ".tmp.", 0) == 0)
        std::filesystem::remove(e.path());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "save" && argc == 4) return save(argv[2], argv[3]);
    if (mode == "load" && argc == 4) return load(argv[2], argv[3]);
    if (mode == "kill" && argc == 3) return kill(argv[2]);
    if (mode == "survived" && argc == 3) return survived(argv[2]);
    std::fprintf(
        stderr,
        "usage: checkpoint_run save|load FILE rows|cols|both|none, or kill|survived FILE\n");
    return 2;
  } catch (const mp::error& e) {
    std::fprintf(stderr, "checkpoint_run: rank %d: %s\n", boost::mpi::communicator().rank(),
                 e.what());
    return 1;
  }
}
