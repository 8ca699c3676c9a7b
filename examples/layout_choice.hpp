// layout_choice.hpp — the README's three layouts as candidates of a layout search, and the
// winner every rank then trains under (examples/mnist, examples/transformer, examples/plan).
//
//   mp::layout_search search(machine);
//   examples::add_three_layouts<mesh_data, mesh_model, mesh_data_model>(
//       search, ranks, [&](const auto& m) { planned_step(m, o); });
//   const auto choice = examples::chosen_layout(search, world, mp::balanced_grid<2>(ranks));
//   // choice.layout: "data", "model" or "data+model"; choice.grid: data+model's mesh shape
#pragma once

#include <meshpp/plan/search.hpp>

#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/mpi/communicator.hpp>

#include <array>
#include <string>

namespace examples {

// add_three_layouts<Data, Model, DataModel>(search, ranks, step): the candidates for `ranks`
// ranks: data and model on the mesh [ranks], data+model on every mesh shape r x ranks/r;
// step(mesh) takes one planned step on a mesh of any of the three types (a generic lambda)
template <class Data, class Model, class DataModel, class Step>
void add_three_layouts(meshpp::layout_search& search, int ranks, const Step& step) {
  search.add<Data>("data", {ranks}, [&](const Data& m) { step(m); });
  search.add<Model>("model", {ranks}, [&](const Model& m) { step(m); });
  for (int r = 1; r <= ranks; ++r) {
    if (ranks % r == 0)
      search.add<DataModel>("data+model", {r, ranks / r}, [&](const DataModel& m) { step(m); });
  }
}

// A layout by name and, for data+model, its mesh shape
struct layout_choice {
  std::string layout;
  std::array<int, 2> grid;
};

// chosen_layout(search, comm, grid): the winner as rank 0 ranks it, the same on every rank of
// comm (a search that timed gemm shapes timed them on each rank, so close candidates may rank
// differently from rank to rank); grid is kept unless data+model wins
inline layout_choice chosen_layout(const meshpp::layout_search& search,
                                   const boost::mpi::communicator& comm, std::array<int, 2> grid) {
  const auto best = search.best();
  std::array<int, 3> c{best.name == "data" ? 0 : best.name == "model" ? 1 : 2, grid[0], grid[1]};
  if (c[0] == 2) c = {2, best.steps.mesh_sizes()[0], best.steps.mesh_sizes()[1]};
  boost::mpi::broadcast(comm, c.data(), 3, 0);
  return {c[0] == 0 ? "data" : c[0] == 1 ? "model" : "data+model", {c[1], c[2]}};
}

}  // namespace examples
