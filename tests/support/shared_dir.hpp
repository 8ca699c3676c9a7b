// shared_dir: a directory every rank of an MPI test sees (rank 0's temp_dir, its path
// broadcast), removed at the end, after every rank is done with it. Collective: every rank
// makes and destroys it together.
#pragma once

#include <boost/mpi/collectives.hpp>
#include <boost/serialization/string.hpp>

#include <memory>
#include <string>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace meshpp_test {

struct shared_dir {
  std::unique_ptr<temp_dir> owned;
  std::string path;
  shared_dir() {
    if (world().rank() == 0) {
      owned = std::make_unique<temp_dir>();
      path = owned->path.string();
    }
    boost::mpi::broadcast(world(), path, 0);
    REQUIRE(all_ranks(!path.empty()));
  }
  ~shared_dir() { world().barrier(); }  // nobody still reads when rank 0 removes it
  shared_dir(const shared_dir&) = delete;
  shared_dir& operator=(const shared_dir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

}  // namespace meshpp_test
