// Adafactor under a replicated layout (vector, matrix, rank-3) and with a leading dim split
// ([layer/a, rows, cols/b]: row statistics allreduced over b only, column statistics and
// their means local), against the single-rank reference of optim_check.hpp under every option
// set of optim_adafactor.cpp.
#include <meshpp/optim/adafactor.hpp>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

TEST_CASE("adafactor matches a plain-loop reference, replicated layout") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  check_adafactor<mp::tensor_of<double, mp::shape<cols>, replicated_mesh>,
                  mp::tensor_of<double, mp::shape<rows, cols>, replicated_mesh>,
                  mp::tensor_of<double, mp::shape<layer, rows, cols>, replicated_mesh>>(m);
}

TEST_CASE("adafactor matches a plain-loop reference, leading dim split") {
  leading_split_mesh m(meshpp_test::grid2(world().size()));
  check_adafactor<mp::tensor_of<double, mp::shape<layer, rows, cols>, leading_split_mesh>>(m);
}
