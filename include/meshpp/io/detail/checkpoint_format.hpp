// meshpp/io/detail/checkpoint_format.hpp — a checkpoint file's layout, as three walks over
// what a checkpoint holds: save_visitor writes it, check_visitor (rank 0 alone, before any
// collective call) finds what a load would fail on, load_visitor reads each rank's blocks.
//
// The layout itself is described at the top of io/checkpoint.hpp; the HDF5 calls are those of
// io/detail/hdf5.hpp.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#ifndef H5_HAVE_PARALLEL
#error \
    "meshpp/io/detail/checkpoint_format.hpp needs a parallel HDF5 (Debian: libhdf5-openmpi-dev; link meshpp::hdf5)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/state.hpp"
#include "meshpp/io/detail/hdf5.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

namespace detail {
// state_visitor with groups: names from enter(group) on are relative to that group
class checkpoint_visitor : public state_visitor {
 public:
  virtual void enter(const std::string& group) = 0;
};
}  // namespace detail

namespace detail {
// visit_count_of(v, name, stream): stream.step() as an integer, set back on load
template <class Stream>
void visit_count_of(state_visitor& v, const std::string& name, Stream& stream) {
  auto step = stream.step();
  visit_count(v, name, step);
  if (v.what() == state_visitor::mode::load) stream.set_step(step);
}
}  // namespace detail

namespace detail::hdf5 {

inline constexpr const char* format_name = "meshpp checkpoint";
inline constexpr std::int64_t format_version = 1;
// file_visitor: what the three walks over a checkpoint file share: the file, the name the
// messages give, the group being visited and the context of one of its attributes
class file_visitor : public checkpoint_visitor {
 protected:
  file_visitor(hid_t file, std::string who) : file_(file), who_(std::move(who)) {}
  context where(std::string_view attribute) const {
    return {who_, "/" + group_name_ + " attribute " + std::string(attribute)};
  }

  hid_t file_;
  std::string who_;
  std::string group_name_;
  handle group_;
};

// save_visitor: writes what it visits into an open file (or, dry, only visits: the walk
// before any collective call, which throws what the walk itself would)
class save_visitor final : public file_visitor {
 public:
  save_visitor(hid_t file, const boost::mpi::communicator& comm, std::string who, bool dry)
      : file_visitor(file, std::move(who)), comm_(comm), dry_(dry) {}
  mode what() const override { return mode::save; }
  bool writes() const override { return !dry_; }

  void enter(const std::string& group) override {
    group_name_ = group;
    if (dry_) return;
    const context c{who_, "/" + group};
    handle lcpl(c.check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
    group_ =
        handle(c.check(H5Gcreate2(file_, ("/" + group).c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT),
                       "H5Gcreate2"),
               H5Gclose);
  }
  void kind(std::string_view name) override {
    if (!dry_) write_attribute(group_, "kind", std::string(name), where("kind"));
  }
  void integer(std::string_view name, std::int64_t& value) override {
    if (!dry_) write_attribute(group_, std::string(name), value, where(name));
  }
  void number(std::string_view name, double& value) override {
    if (!dry_) write_attribute(group_, std::string(name), value, where(name));
  }
  void optional_number(std::string_view name, std::optional<double>& value) override {
    if (!dry_ && value) write_attribute(group_, std::string(name), *value, where(name));
  }
  bool has_tensor(std::string_view) override { return false; }

  // one dataset in the global shape; each rank's hyperslab in one collective write
  void tensor(std::string_view name, const block_view& b) override {
    if (dry_) return;
    const std::string path = path_in(group_name_, name);
    const context c{who_, path};
    handle lcpl(c.check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
    handle dcpl(c.check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");  // written whole
    const std::vector<hsize_t> global(b.global_shape.begin(), b.global_shape.end());
    handle file_space = simple_space(global, c);
    handle d(c.check(H5Dcreate2(file_, path.c_str(), hdf5_types_of(b.type).file, file_space, lcpl,
                                dcpl, H5P_DEFAULT),
                     "H5Dcreate2"),
             H5Dclose);
    write_attribute(d, "dims", b.dims, false, c);
    write_attribute(d, "layout", b.layout.empty() ? std::string("(replicated)") : b.layout, c);
    write_attribute(d, "mesh", b.mesh, c);
    select_block(file_space, b, b.writer, c);
    handle memory = memory_space(b, b.writer, c);
    handle dxpl = collective_transfer(c);
    c.check(H5Dwrite(d, hdf5_types_of(b.type).memory, memory, file_space, dxpl, b.data),
            "H5Dwrite");
    write_attribute(d, "checksum", global_checksum(comm_, b), c);
    if (after_dataset_hook) after_dataset_hook(path);
  }

  // called after each dataset is written: the tests' way to kill a job mid-save
  static inline void (*after_dataset_hook)(const std::string& dataset) = nullptr;

 private:
  const boost::mpi::communicator& comm_;
  bool dry_;
};

// check_visitor: compares the file with what it visits and collects what differs (rank 0,
// the file opened serially, before any collective call); changes nothing
class check_visitor final : public file_visitor {
 public:
  check_visitor(hid_t file, std::string who) : file_visitor(file, std::move(who)) {}
  mode what() const override { return mode::check; }
  std::vector<std::string> problems;

  void enter(const std::string& group) override {
    group_name_ = group;
    group_.reset();
    const context c{who_, "/" + group};
    guard([&] {
      if (!exists(file_, "/" + group, c)) c.fail("group is missing");
      group_ = handle(c.check(H5Gopen2(file_, ("/" + group).c_str(), H5P_DEFAULT), "H5Gopen2"),
                      H5Gclose);
    });
  }
  void kind(std::string_view name) override {
    if (group_.get() < 0) return;
    guard([&] {
      const context c = where("kind");
      const auto found = read_strings(group_, "kind", c);
      if (found.size() != 1 || found[0] != name)
        c.fail("holds the state of " + joined(found) + ", not of " + std::string(name));
    });
  }
  void integer(std::string_view name, std::int64_t&) override {
    if (group_.get() >= 0)
      guard([&] { read_number<std::int64_t>(group_, std::string(name), where(name)); });
  }
  void number(std::string_view name, double&) override {
    if (group_.get() >= 0)
      guard([&] { read_number<double>(group_, std::string(name), where(name)); });
  }
  void optional_number(std::string_view name, std::optional<double>&) override {
    if (group_.get() < 0) return;
    guard([&] {
      const context c = where(name);
      if (c.check(H5Aexists(group_, std::string(name).c_str()), "H5Aexists") > 0)
        read_number<double>(group_, std::string(name), c);
    });
  }
  bool has_tensor(std::string_view name) override {
    const std::string path = path_in(group_name_, name);
    bool found = false;
    guard([&] { found = exists(file_, path, context{who_, path}); });
    return found;
  }
  void tensor(std::string_view name, const block_view& b) override {
    const std::string path = path_in(group_name_, name);
    guard([&] {
      const context c{who_, path};
      if (!exists(file_, path, c)) c.fail("dataset is missing");
      handle d(c.check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
      handle type(c.check(H5Dget_type(d), "H5Dget_type"), H5Tclose);
      const auto stored = element_type_of_file(type);
      if (!stored || *stored != b.type)
        c.fail("holds " + describe_type(type) + ", the tensor " + element_type_name(b.type));
      handle space(c.check(H5Dget_space(d), "H5Dget_space"), H5Sclose);
      const int rank = c.check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims");
      std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
      c.check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims");
      const std::vector<std::uint64_t> shape(dims.begin(), dims.end());
      const auto names = read_strings(d, "dims", context{who_, path + " attribute dims"});
      if (names != b.dims)
        c.fail("has dims " + joined(names) + ", the tensor " + joined(b.dims) +
               " (dims must match by name and order)");
      if (shape != b.global_shape)
        c.fail("has shape " + joined(shape) + " over dims " + joined(names) + ", the tensor " +
               joined(b.global_shape));
      read_number<std::int64_t>(d, "checksum", context{who_, path + " attribute checksum"});
    });
  }

 private:
  template <class F>
  void guard(F&& f) {
    try {
      f();
    } catch (const error& e) {
      problems.push_back(e.what());
    }
  }
};

// load_visitor: reads what it visits from a file every rank opened in parallel (after the
// check found nothing wrong); each rank the hyperslab of its own block, collectively
class load_visitor final : public file_visitor {
 public:
  load_visitor(hid_t file, const boost::mpi::communicator& comm, std::string who)
      : file_visitor(file, std::move(who)), comm_(comm) {}
  mode what() const override { return mode::load; }

  void enter(const std::string& group) override {
    group_name_ = group;
    const context c{who_, "/" + group};
    group_ =
        handle(c.check(H5Gopen2(file_, ("/" + group).c_str(), H5P_DEFAULT), "H5Gopen2"), H5Gclose);
  }
  void kind(std::string_view) override {}
  void integer(std::string_view name, std::int64_t& value) override {
    value = read_number<std::int64_t>(group_, std::string(name), where(name));
  }
  void number(std::string_view name, double& value) override {
    value = read_number<double>(group_, std::string(name), where(name));
  }
  void optional_number(std::string_view name, std::optional<double>& value) override {
    const context c = where(name);
    if (c.check(H5Aexists(group_, std::string(name).c_str()), "H5Aexists") > 0)
      value = read_number<double>(group_, std::string(name), c);
    else
      value.reset();
  }
  bool has_tensor(std::string_view name) override {
    const std::string path = path_in(group_name_, name);
    return exists(file_, path, context{who_, path});
  }
  void tensor(std::string_view name, const block_view& b) override {
    const std::string path = path_in(group_name_, name);
    const context c{who_, path};
    handle d(c.check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
    handle file_space(c.check(H5Dget_space(d), "H5Dget_space"), H5Sclose);
    select_block(file_space, b, true, c);
    handle memory = memory_space(b, true, c);
    handle dxpl = collective_transfer(c);
    c.check(H5Dread(d, hdf5_types_of(b.type).memory, memory, file_space, dxpl, b.data), "H5Dread");
    // the same verdict on every rank: the sum is allreduced, the attribute the same file's
    if (global_checksum(comm_, b) != read_number<std::int64_t>(d, "checksum", c))
      c.fail(
          "the data do not match their checksum: the file is corrupt (the tensor now holds "
          "what was read)");
  }

 private:
  const boost::mpi::communicator& comm_;
};

// rank 0's verdict, broadcast: empty, or the problem every rank throws
inline void agree_with_rank0(const boost::mpi::communicator& comm, std::string problem) {
  broadcast_text(MPI_Comm(comm), problem, 0, "checkpoint (rank 0's verdict)");
  if (!problem.empty()) throw error(problem);
}

}  // namespace detail::hdf5

}  // namespace meshpp
