// relayout: an activation [batch, d_model] switched between data parallelism (batch:all) and
// model parallelism (d_model:all), as GSPMD-style models do between layers, against a raw
// MPI_Alltoall of the same bytes (without the packing and unpacking relayout must do to put
// every block where its layout says). One sent block of [batch/all, d_model] is strided, its
// received one is not; and the other way back. Then [batch, seq, d_model] switched between
// seq:all and d_model:all, where the blocks are strided on both sides.
//
// usage: mpiexec -n P bench/relayout [--direct-copies on|off]
// (--direct-copies off: relayouts among one node's ranks go through MPI_Alltoallv, not the
// direct copies of comm/single_copy.hpp, to measure what those save)
#include <meshpp/meshpp.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include "bench.hpp"
#include "cli.hpp"

namespace mp = meshpp;
MESHPP_DIM(batch);
MESHPP_DIM(d_model);
MESHPP_DIM(seq);
MESHPP_DIM(all);

using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using data_parallel = mp::layout<mp::split<batch, all>>;
using model_parallel = mp::layout<mp::split<d_model, all>>;
using sequence_parallel = mp::layout<mp::split<seq, all>>;

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::string direct_copies = mp::detail::single_copy_relayout ? "on" : "off";
  examples::cli cli("bench/relayout",
                    "an activation switched between layouts against a raw MPI_Alltoall of the "
                    "same bytes; one JSON line per case");
  cli.choose("--direct-copies", direct_copies, {"on", "off"},
             "one node's ranks copy directly (off: MPI_Alltoallv)");
  cli.parse(argc, argv);
  mp::detail::single_copy_relayout = direct_copies == "on";
  const int n = boost::mpi::communicator().size();
  mesh_t mesh({n});
  for (std::size_t rows : {256, 1024, 4096}) {
    const auto sizes = mp::extents{batch{} = rows, d_model{} = 1024};
    const auto dp = mp::random_normal<float, batch, d_model>(mesh, sizes, 1);
    const auto mp_copy = mp::relayout<model_parallel>(dp);
    if (!(mp::gather(mp_copy) == mp::gather(dp))) throw mp::error("relayout bench: results differ");
    std::vector<float> send(dp.local().size()), recv(send.size());
    const int block = static_cast<int>(send.size()) / n;
    const std::string name = "[batch " + std::to_string(rows) + ", d_model 1024] float";
    const auto to_model = bench::compare(
        mesh.world(), [&] { auto t = mp::relayout<model_parallel>(dp); },
        [&] {
          MPI_Alltoall(send.data(), block, MPI_FLOAT, recv.data(), block, MPI_FLOAT,
                       MPI_COMM_WORLD);
        });
    bench::print(mesh.world(), "relayout", "batch:all -> d_model:all " + name, "MPI_Alltoall",
                 to_model);
    const auto to_data = bench::compare(
        mesh.world(), [&] { auto t = mp::relayout<data_parallel>(mp_copy); },
        [&] {
          MPI_Alltoall(send.data(), block, MPI_FLOAT, recv.data(), block, MPI_FLOAT,
                       MPI_COMM_WORLD);
        });
    bench::print(mesh.world(), "relayout", "d_model:all -> batch:all " + name, "MPI_Alltoall",
                 to_data);
  }
  {
    const auto sizes = mp::extents{batch{} = 8, seq{} = 512, d_model{} = 1024};
    const auto by_seq = mp::relayout<sequence_parallel>(
        mp::random_normal<float, batch, seq, d_model>(mesh, sizes, 2));
    const auto by_model = mp::relayout<model_parallel>(by_seq);
    if (!(mp::gather(by_model) == mp::gather(by_seq))) {
      throw mp::error("relayout bench: results differ");
    }
    std::vector<float> send(by_seq.local().size()), recv(send.size());
    const int block = static_cast<int>(send.size()) / n;
    const std::string name = "[batch 8, seq 512, d_model 1024] float";
    auto baseline = [&] {
      MPI_Alltoall(send.data(), block, MPI_FLOAT, recv.data(), block, MPI_FLOAT, MPI_COMM_WORLD);
    };
    const auto to_model = bench::compare(
        mesh.world(), [&] { auto t = mp::relayout<model_parallel>(by_seq); }, baseline);
    bench::print(mesh.world(), "relayout", "seq:all -> d_model:all " + name, "MPI_Alltoall",
                 to_model);
    const auto to_seq = bench::compare(
        mesh.world(), [&] { auto t = mp::relayout<sequence_parallel>(by_model); }, baseline);
    bench::print(mesh.world(), "relayout", "d_model:all -> seq:all " + name, "MPI_Alltoall",
                 to_seq);
  }
  {
    // uneven splits (docs/concepts.md, "Uneven splits"): both dims one short of a multiple of the
    // ranks, so every block has its own size; against MPI_Alltoallv of exactly those blocks
    const std::size_t rows = 4096 - 1, cols = 1024 - 1;
    const auto sizes = mp::extents{batch{} = rows, d_model{} = cols};
    const auto dp = mp::random_normal<float, batch, d_model>(mesh, sizes, 3);
    const auto mp_copy = mp::relayout<model_parallel>(dp);
    if (!(mp::gather(mp_copy) == mp::gather(dp))) throw mp::error("relayout bench: results differ");
    const auto p = static_cast<std::size_t>(n), me = static_cast<std::size_t>(mesh.rank());
    std::vector<int> send_counts(p), recv_counts(p), send_at(p), recv_at(p);
    int s = 0, r = 0;
    for (std::size_t j = 0; j < p; ++j) {
      // to member j: my rows of its columns; from member j: its rows of my columns
      send_counts[j] = static_cast<int>(mp::detail::stripe_size(rows, p, me) *
                                        mp::detail::stripe_size(cols, p, j));
      recv_counts[j] = static_cast<int>(mp::detail::stripe_size(rows, p, j) *
                                        mp::detail::stripe_size(cols, p, me));
      send_at[j] = s;
      recv_at[j] = r;
      s += send_counts[j];
      r += recv_counts[j];
    }
    std::vector<float> send(static_cast<std::size_t>(s)), recv(static_cast<std::size_t>(r));
    const std::string name = "[batch 4095, d_model 1023] float (uneven)";
    const auto to_model = bench::compare(
        mesh.world(), [&] { auto t = mp::relayout<model_parallel>(dp); },
        [&] {
          MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_FLOAT, recv.data(),
                        recv_counts.data(), recv_at.data(), MPI_FLOAT, MPI_COMM_WORLD);
        });
    bench::print(mesh.world(), "relayout", "batch:all -> d_model:all " + name, "MPI_Alltoallv",
                 to_model);
  }
  return 0;
}
