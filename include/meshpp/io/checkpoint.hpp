// meshpp/io/checkpoint.hpp — checkpoints in one parallel-HDF5 file that loads into any mesh
// and layout.
//
//   mp::checkpoint ckpt;
//   ckpt.add(w1, w2)                 // variables, under their own names
//       .add(model)                  // every variable of a model's layers() (parameters.hpp)
//       .add("x", x)                 // any tensor (or variable) under a name
//       .add(opt)                    // the optimizer: kind, hyperparameters, steps, slots
//       .add("epoch", epoch);        // a scalar of the program (integral or floating)
//   mp::save("run.h5", mesh, ckpt);  // collective; atomic: run.h5 is the old or the new file
//   mp::load("run.h5", mesh, ckpt);  // collective; into this mesh and these layouts
//
// Needs parallel HDF5 (Debian's libhdf5-openmpi-dev) and the CMake target meshpp::hdf5;
// meshpp/meshpp.hpp does not include this header, so the rest of meshpp builds without HDF5.
//
// The file (HDF5 1.8's format, with checksummed metadata; h5dump and h5py read it;
// docs/checkpoints.md shows one):
//   /                       attributes format "meshpp checkpoint", format_version, mesh, ranks
//   /variables/<name>       a dataset in the tensor's GLOBAL shape, its element type
//                           (float32/64, int32/64, little-endian); attributes dims (the dim
//                           names, in order), layout and mesh it was saved under (informational),
//                           checksum (of the global array: see block_checksum)
//   /scalars                attributes: the program's scalars (int64 or float64)
//   /optimizer              attributes kind ("adam", "sgd", ...), steps, the hyperparameters
//   /optimizer/slots/<name> attribute updates (and factored: Adafactor); datasets m, v
//                           (Adam), momentum (SGD), v_r, v_c, v, m (Adafactor), as they exist
// A name with '/' nests groups ("block0/attention/wq").
//
// Saving: every rank writes the hyperslab of its own block, in one collective H5Dwrite per
// dataset (H5FD_MPIO_COLLECTIVE); a block held by several ranks (a replicated dim) is written
// by the first of them only (block_view::writer), the others join the collective with an empty
// selection. The file is written as <path>.tmp.<pid>.<time> (a name rank 0 draws and
// broadcasts), closed by every rank, then renamed to <path> by rank 0 after a barrier (fsync
// of the file before, of the directory after): a job killed mid-save leaves the last good
// <path> and a stray .tmp file, never a torn <path>.
//
// Loading (resharding): every rank reads the hyperslab of the block that its own tensor holds
// under its own mesh and layout, in one collective H5Dread per dataset: the file does not
// record which ranks wrote it, so 4 ranks under one layout save what 2 or 1 under another load.
// Dims must match by name and order, sizes and element types exactly. Datasets in the file that
// nothing added asks for are ignored. Hyperparameters and the step count are restored (as
// PyTorch's load_state_dict does): set_learning_rate() after load() to change them.
//
// Failing together: everything that can be wrong with the input is found before the first
// collective HDF5 call: names (empty, twice, one a group of another) and optimizers that
// cannot be saved on every rank alike, with no communication; the file (missing, not HDF5,
// truncated, not a meshpp checkpoint, a dataset or attribute missing, a dim name, size or
// element type that differs, another optimizer kind) by rank 0 alone, which opens it serially
// and broadcasts what it found, so every rank throws the same meshpp::error naming the file,
// the object and, for an HDF5 failure, the call and HDF5's own message. The data themselves
// are checked after they are read: each dataset carries a checksum of its global array (a
// sum over its elements of a hash of global index and bits, so any layout recomputes it from
// its own blocks, with one allreduce); a mismatch, a corrupt file, throws on every rank alike,
// the tensor then holding what was read. A failure inside a collective write or read (a disk
// failing mid-save) throws on the ranks that see it, like any I/O error in MPI-IO.
//
// Communication outside HDF5's own collectives: save completes an optimizer's state where
// sharded updates left it in shares (one allgather per state tensor over its variable's
// replicas, optim/optimizer.hpp), broadcasts the temporary name (and a problem with the
// directory) from rank 0, allreduces one 64-bit checksum per dataset, waits at
// a barrier after closing, and broadcasts the result of the rename; load broadcasts rank 0's
// verdict on the file and allreduces one checksum per dataset. All but the allgathers over the
// mesh's communicator (mesh.world()).
//
// Its parts: the HDF5 wrapper (io/detail/hdf5.hpp), the file's layout as walks over a checkpoint
// (io/detail/checkpoint_format.hpp), the file replaced atomically (io/detail/atomic_file.hpp).
#pragma once

#include <hdf5.h>
#include <mpi.h>

#ifndef H5_HAVE_PARALLEL
#error \
    "meshpp/io/checkpoint.hpp needs a parallel HDF5 (Debian: libhdf5-openmpi-dev; link meshpp::hdf5)"
#endif

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/state.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/io/detail/atomic_file.hpp"
#include "meshpp/io/detail/checkpoint_format.hpp"
#include "meshpp/io/detail/hdf5.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

namespace offending {
template <class X>
inline constexpr bool checkpoint_add_takes_tensors_and_scalars = false;
}  // namespace offending

/// @brief What a checkpoint holds: named tensors and variables, one optimizer, and scalars of
/// the program, by reference (each must outlive the checkpoint's save() and load() calls;
/// variables are held by handle, so a copy of one is the variable itself).
class checkpoint {
 public:
  // add(parts...): variables under their own names (variable(t, "w1")), or every variable of
  // these layers or models (autodiff/parameters.hpp), each under its own name
  template <class... Parts>
  requires(sizeof...(Parts) > 0 && (is_model_part_v<Parts> && ...) &&
           !(std::is_base_of_v<optimizer, Parts> || ...)) checkpoint& add(const Parts&... parts) {
    (for_each_variable(parts, [&](const auto& v) { add_variable(v.name(), v); }), ...);
    return *this;
  }

  // add(name, x): a variable, a tensor, an integral or floating-point scalar, or the position
  // of a random stream (anything with step() and set_step(s), as dropout_layer), under `name`
  template <class X>
  requires(!std::is_base_of_v<optimizer, X>) checkpoint& add(std::string name, X& x) {
    if constexpr (detail::is_variable_v<std::remove_const_t<X>>) {
      add_variable(std::move(name), x);
    } else if constexpr (is_tensor_v<X>) {
      tensors_.push_back({std::move(name), nullptr, [&x] { return view_of(x); }});
    } else if constexpr (std::is_integral_v<X>) {
      scalars_.push_back({std::move(name),
                          [&x](state_visitor& v, const std::string& n) { visit_count(v, n, x); }});
    } else if constexpr (requires { x.set_step(x.step()); }) {
      // a counter-based random stream's position (nn/dropout.hpp's dropout_layer): its step
      scalars_.push_back({std::move(name), [&x](state_visitor& v, const std::string& n) {
                            detail::visit_count_of(v, n, x);
                          }});
    } else if constexpr (std::is_floating_point_v<X>) {
      scalars_.push_back({std::move(name), [&x](state_visitor& v, const std::string& n) {
                            double d = static_cast<double>(x);
                            v.number(n, d);
                            if (v.what() == state_visitor::mode::load) x = static_cast<X>(d);
                          }});
    } else {
      static_assert(is_tensor_v<X> || offending::checkpoint_add_takes_tensors_and_scalars<X>,
                    "meshpp::checkpoint::add(name, x): x must be a meshpp::variable, a "
                    "meshpp::tensor, a (non-const) integral or floating-point scalar, or have "
                    "step() and set_step()");
    }
    return *this;
  }

  // add(optimizer): its kind, hyperparameters, step count and, per variable, its state, the
  // variable named as it was added here (or by its own name). One optimizer per checkpoint.
  checkpoint& add(optimizer& opt) {
    if (optimizer_ && optimizer_ != &opt)
      throw error("meshpp::checkpoint::add(optimizer): a checkpoint holds one optimizer");
    optimizer_ = &opt;
    return *this;
  }

  // complete_state(comm, who): the optimizer's state whole on every rank (sharded updates leave
  // it in shares, optim/optimizer.hpp): what save() does first. Collective over the variables'
  // mesh; throws meshpp::error before any communication if comm's ranks are not its ranks.
  void complete_state(MPI_Comm comm, const std::string& who) const {
    if (!optimizer_) return;
    optimizer_->check_state_over(comm, who);
    optimizer_->complete_state();
  }

  // walk(v): everything added, through v, in one fixed order (the same on every rank)
  void walk(detail::checkpoint_visitor& v) const {
    v.enter("variables");
    for (const auto& t : tensors_) v.tensor(t.name, t.view());
    v.enter("scalars");
    for (const auto& s : scalars_) s.visit(v, s.name);
    if (!optimizer_) return;
    v.enter("optimizer");
    optimizer_->visit_state(v);
    for (std::size_t i = 0; i < optimizer_->size(); ++i) {
      v.enter("optimizer/slots/" + slot_name(i));
      optimizer_->visit_slot(i, v);
    }
  }

  // validate(who): throws meshpp::error unless every name is non-empty, given once and not a
  // group of another (a dataset "a" and "a/b"), and the optimizer can be saved. Every rank
  // alike, no communication.
  void validate(const std::string& who) const {
    auto check_names = [&](const std::vector<std::string>& names, const char* what) {
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& a = names[i];
        if (a.empty() || a.front() == '/' || a.back() == '/' || a.find("//") != std::string::npos ||
            a.find('.') == 0)
          throw error(who + ": " + what + " name '" + a +
                      "' is empty or not a path like 'w1' or 'block0/wq'");
        for (std::size_t j = 0; j < names.size(); ++j) {
          if (i == j) continue;
          const std::string& b = names[j];
          if (a == b && i < j) throw error(who + ": " + what + " name '" + a + "' is given twice");
          if (b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '/')
            throw error(who + ": " + what + " name '" + a + "' is also a group of '" + b + "'");
        }
      }
    };
    std::vector<std::string> names;
    for (const auto& t : tensors_) names.push_back(t.name);
    check_names(names, "tensor");
    names.clear();
    for (const auto& s : scalars_) names.push_back(s.name);
    check_names(names, "scalar");
    if (optimizer_) {
      names.clear();
      for (std::size_t i = 0; i < optimizer_->size(); ++i) names.push_back(slot_name(i));
      check_names(names, "optimizer variable");
    }
  }

 private:
  struct tensor_entry {
    std::string name;
    const detail::node_base* node;  // a variable's identity; nullptr for a tensor
    std::function<block_view()> view;
  };
  struct scalar_entry {
    std::string name;
    std::function<void(state_visitor&, const std::string&)> visit;
  };

  template <class Tensor>
  void add_variable(std::string name, const variable<Tensor>& v) {
    tensors_.push_back({std::move(name), v.node().get(), [shared = variable<Tensor>(v)]() mutable {
                          return view_of(shared.value());
                        }});
  }

  // slot_name(i): the name the optimizer's variable i was added here under, or its own
  std::string slot_name(std::size_t i) const {
    for (const auto& t : tensors_) {
      if (t.node && t.node == optimizer_->variable_node(i)) return t.name;
    }
    return optimizer_->variable_name(i);
  }

  std::vector<tensor_entry> tensors_;
  std::vector<scalar_entry> scalars_;
  optimizer* optimizer_ = nullptr;
};

// save(path, mesh, checkpoint): writes everything the checkpoint holds to the HDF5 file `path`
// (see the top of this header), atomically. Collective over mesh.world() (and first, where an
// optimizer's sharded updates left its state in shares, over its variables' mesh, which must
// have the same ranks). Throws meshpp::error on every rank, before any collective HDF5 call,
// for bad names, an optimizer that cannot be saved, an optimizer state in shares over other
// ranks than mesh's, or a directory that does not exist or cannot be written.
template <class Mesh>
void save(const std::string& path, const Mesh& mesh, const checkpoint& ckpt) {
  namespace h5 = detail::hdf5;
  const std::string who = "meshpp::save('" + path + "')";
  const boost::mpi::communicator& comm = mesh.world();
  ckpt.validate(who);
  // an optimizer's sharded state: one allgather per state tensor
  ckpt.complete_state(MPI_Comm(comm), who);
  {
    h5::save_visitor dry(H5I_INVALID_HID, comm, who,
                         true);  // throws what the walk would, everywhere
    ckpt.walk(dry);
  }
  // rank 0 draws the temporary name and checks the directory
  const std::string temporary = detail::temporary_beside(comm, path, who);

  h5::errors_off quiet;
  const h5::context c{who, temporary};
  {
    h5::handle fapl = h5::parallel_access(comm, c);
    h5::handle file(
        c.check(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "H5Fcreate"),
        H5Fclose);
    h5::write_attribute(file, "format", std::string(h5::format_name), c);
    h5::write_attribute(file, "format_version", h5::format_version, c);
    h5::write_attribute(file, "mesh", mesh.describe(), c);
    h5::write_attribute(file, "ranks", std::int64_t{comm.size()}, c);
    {
      h5::save_visitor writer(file, comm, who, false);  // holds a group open until its scope ends
      ckpt.walk(writer);
    }
    file.close(c, "H5Fclose");
  }
  detail::rename_into_place(comm, temporary, path, who);
}

// load(path, mesh, checkpoint): reads everything the checkpoint holds from `path`, each rank
// the block of its own tensors under their layouts (any mesh, any layout). Collective over
// mesh.world(). Throws meshpp::error on every rank, before any collective HDF5 call and with
// nothing changed, if the file is missing, unreadable or truncated, or lacks or differs in
// anything asked for (see the top of this header).
template <class Mesh>
void load(const std::string& path, const Mesh& mesh, checkpoint& ckpt) {
  namespace h5 = detail::hdf5;
  const std::string who = "meshpp::load('" + path + "')";
  const boost::mpi::communicator& comm = mesh.world();
  ckpt.validate(who);
  h5::errors_off quiet;
  const h5::context c{who, ""};
  std::string problem;
  if (comm.rank() == 0) {
    try {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0)
        c.fail(std::string("cannot read the file: ") + std::strerror(errno));
      if (c.check(H5Fis_hdf5(path.c_str()), "H5Fis_hdf5") <= 0) c.fail("not an HDF5 file");
      h5::handle file(c.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen"),
                      H5Fclose);
      const auto format = h5::read_strings(file, "format", h5::context{who, "/ attribute format"});
      if (format.size() != 1 || format[0] != h5::format_name)
        c.fail("not a meshpp checkpoint (attribute format is " + h5::joined(format) + ")");
      const auto version =
          h5::read_number<std::int64_t>(file, "format_version", h5::context{who, "/"});
      if (version != h5::format_version)
        c.fail("format version " + std::to_string(version) + ", this meshpp reads " +
               std::to_string(h5::format_version));
      h5::check_visitor checker(file, who);
      ckpt.walk(checker);
      for (std::size_t i = 0; i < checker.problems.size() && i < 8; ++i)
        problem += (i ? "\n" : "") + checker.problems[i];
      if (checker.problems.size() > 8)
        problem += "\n(and " + std::to_string(checker.problems.size() - 8) + " more)";
    } catch (const error& e) {
      problem = e.what();
    }
  }
  h5::agree_with_rank0(comm, problem);

  h5::handle fapl = h5::parallel_access(comm, c);
  h5::handle file(c.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), "H5Fopen"), H5Fclose);
  {
    h5::load_visitor reader(file, comm, who);  // holds a group open until its scope ends
    ckpt.walk(reader);
  }
  file.close(c, "H5Fclose");
}

}  // namespace meshpp
