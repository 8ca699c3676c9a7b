// A user's first meshpp program: a random tensor split over a mesh of every rank, gathered
// back and compared with the same tensor made on one rank. Rank 0 also prints meshpp's version
// (consumer/pkg_config compares it with meshpp.pc's).
#include <meshpp/meshpp.hpp>

#include <cstdio>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(features);
MESHPP_DIM(all);

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t mesh({boost::mpi::communicator().size()});
  if (mesh.rank() == 0) std::printf("meshpp %s\n", MESHPP_VERSION_STRING);
  const auto sizes = mp::extents{batch{} = 8, features{} = 3};
  const auto x = mp::random_normal<float, batch, features>(mesh, sizes, 42);
  const auto whole = mp::gather(x);

  int wrong = 0;
  for (std::size_t b = 0; b < 8; ++b) {
    for (std::size_t f = 0; f < 3; ++f) {
      wrong += whole(b, f) != mp::normal_at<float>(42, b * 3 + f);
    }
  }
  std::printf("rank %d: %s\n", mesh.rank(), x.describe().c_str());
  return wrong == 0 ? 0 : 1;
}
