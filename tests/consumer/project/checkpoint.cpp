// A user's checkpoint (meshpp::hdf5): a tensor split over every rank saved, then loaded into a
// replicated tensor of another program's layout, and compared.
#include <meshpp/io/checkpoint.hpp>
#include <meshpp/meshpp.hpp>

#include <cstdio>
#include <string>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(features);
MESHPP_DIM(all);

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const std::string file = argc > 1 ? argv[1] : "consumer.h5";
  using split_mesh = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  using whole_mesh = mp::mesh<mp::axes<all>>;
  const int n = boost::mpi::communicator().size();
  const auto sizes = mp::extents{batch{} = 8, features{} = 3};
  split_mesh split({n});
  auto x = mp::random_normal<float, batch, features>(split, sizes, 42);
  mp::checkpoint out;
  out.add("x", x);
  mp::save(file, split, out);

  whole_mesh whole({n});
  auto y = mp::zeros<float, batch, features>(whole, sizes);
  mp::checkpoint in;
  in.add("x", y);
  mp::load(file, whole, in);
  int wrong = 0;
  for (std::size_t b = 0; b < 8; ++b)
    for (std::size_t f = 0; f < 3; ++f)
      wrong += y.local()(b, f) != mp::normal_at<float>(42, b * 3 + f);
  std::printf("rank %d: checkpoint %s\n", whole.rank(), wrong ? "differs" : "loads");
  return wrong == 0 ? 0 : 1;
}
