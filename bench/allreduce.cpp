// allreduce: meshpp's allreduce<over<all>> policy (through the mesh's cached
// sub-communicator and the counters) against a raw MPI_Allreduce of the same bytes on
// MPI_COMM_WORLD, in place, 4 KiB to 64 MiB; and its reduce_scatter<over<all>> (a sum of
// floats: at 2 ranks, and from 64 KiB a block at more, meshpp's ring of MPI_Sendrecv,
// comm/collectives.hpp) against the raw MPI_Reduce_scatter_block of the same blocks, 64 KiB to
// 64 MiB of input.
#include <meshpp/meshpp.hpp>

#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "bench.hpp"

namespace mp = meshpp;
MESHPP_DIM(all);

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const int n = boost::mpi::communicator().size();
  mp::mesh<mp::axes<all>> mesh({n});
  for (std::size_t bytes = 4096; bytes <= (std::size_t{64} << 20); bytes *= 4) {
    std::vector<float> a(bytes / sizeof(float), 0.0f), b(a.size(), 0.0f);
    const auto t = bench::compare(
        mesh.world(), [&] { mp::allreduce<mp::over<all>>::run(mesh, std::span(a)); },
        [&] {
          MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(b.size()), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        });
    const std::string size = bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                                                 : std::to_string(bytes >> 10) + " KiB";
    bench::print(mesh.world(), "allreduce", "sum float " + size, "MPI_Allreduce", t);
  }
  for (std::size_t bytes = 65536; bytes <= (std::size_t{64} << 20); bytes *= 4) {
    const std::size_t block = bytes / sizeof(float) / static_cast<std::size_t>(n);
    std::vector<float> in(block * static_cast<std::size_t>(n), 1.0f), a(block), b(block);
    const auto t = bench::compare(
        mesh.world(),
        [&] {
          mp::reduce_scatter<mp::over<all>>::run(mesh, std::span<const float>(in), std::span(a));
        },
        [&] {
          MPI_Reduce_scatter_block(in.data(), b.data(), static_cast<int>(block), MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD);
        });
    const std::string size = bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                                                 : std::to_string(bytes >> 10) + " KiB";
    bench::print(mesh.world(), "reduce_scatter", "sum float " + size + " in",
                 "MPI_Reduce_scatter_block", t);
  }
  return 0;
}
