// meshpp/comm/collectives.hpp — collectives as policy templates over sets of mesh dims.
//
//   allreduce<over<rows>>::run(mesh, span)                 in place, sum
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//   allgather<over<cols>>::run(mesh, in, out)              out: blocks in mesh-coordinate order
//   alltoall<over<cols>>::run(mesh, in, out)
//   alltoall<over<cols>>::run_in_pieces(mesh, counts, bound, move)  blocks where they lie
//   reduce_scatter<over<rows>>::run(mesh, in, out)         sum; block j to group member j
//   broadcast<over<rows>>::run(mesh, span, root)           root: a rank of the group
//
// allgather, alltoall and reduce_scatter also take blocks of different sizes, one per member
// (`run_blocks`, with the counts of every member's block: a dim split unevenly; blocks all of
// one size take the even form, for allgather and reduce_scatter; alltoall's run_blocks_where
// takes each block where it lies). Counted as
// the even forms are, with the same meaning, so an even split counts the same either way:
// allgather and reduce_scatter record the values of this rank's input and the bytes of the
// others' blocks; alltoall the values of all its send blocks and the bytes of those it sends
// to other members.
//
// `over<Ms...>` names the mesh dims the collective runs over; it resolves at compile time to
// the mesh's cached sub-communicator of the ranks that differ only in Ms (mesh.hpp). Each
// call is recorded in the mesh's counters, but a group of one rank (mesh dims all of size 1)
// moves nothing and counts nothing (core/counters.hpp); an allreduce over no mesh dims at all
// is no collective and is neither run nor counted. Every MPI call goes through
// core/checked.hpp: its return code checked (an error names the rank, the call, the
// operation, its mesh dims, type and count), counts of any size (split into calls of at most
// INT_MAX values, or strided derived datatypes), and, with MESHPP_CHECK_COLLECTIVES=1, the
// group's agreement on the call before any data moves. Buffers are passed to MPI as they are:
// no staging copies (but for a reduce_scatter of blocks over INT_MAX values). A reduce_scatter
// sum of float or double runs a ring of MPI_Sendrecv calls of its own (ring_sum_scatter,
// comm/detail/ring_schedule.hpp), which keeps the partial sums it passes on in staging buffers
// over more than 2 members.
//
// One primitive a header: comm/allreduce.hpp, allgather.hpp, alltoall.hpp, reduce_scatter.hpp,
// broadcast.hpp; over<...> and op:: in comm/over.hpp; what they share in
// comm/detail/collective.hpp. This header includes them all.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/datatype.hpp>

#include "meshpp/comm/allgather.hpp"
#include "meshpp/comm/allreduce.hpp"
#include "meshpp/comm/alltoall.hpp"
#include "meshpp/comm/broadcast.hpp"
#include "meshpp/comm/over.hpp"
#include "meshpp/comm/reduce_scatter.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/lanes.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/shape.hpp"
