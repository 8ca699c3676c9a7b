// meshpp/comm/buckets.hpp — gradients summed in buckets: one nonblocking allreduce
// (MPI_Iallreduce) of a flat buffer for many gradients, started while backward goes on.
//
//   bucket_queue q(4 << 20);                      // a bucket starts once it holds 4 MiB
//   auto b = q.add(mesh, mask, span_of_values);   // joins the open bucket of its group and type
//   q.poll();                                     // lets started buckets progress
//   q.flush();                                    // sums every bucket still open
//   b->wait();                                    // the span now holds the sums over the group
//
// Without buckets a data-parallel step makes one blocking allreduce per parameter (30 for a
// two-layer Transformer); a bucket makes one for all the gradients that need the same sum, and the
// buckets that fill early run while the rest of backward computes. Buckets of one group and
// value type start in the order they fill, and every rank fills them in the same order (the
// gradient graph is the same everywhere), so every rank issues the same collectives in the
// same order on each communicator, as MPI requires.
//
// The buckets still open when the pass ends are summed then, with the blocking MPI_Allreduce:
// nothing is left to overlap them with, and Open MPI 4.1's MPI_Iallreduce takes about twice as
// long as its MPI_Allreduce at 2 ranks. A model whose gradients fit one bucket (the MNIST
// example's network, the example Transformer at the default 4 MiB) thus makes the blocking call.
//
// Counters (core/counters.hpp): one allreduce call per MPI call, its values the values it
// sums, recorded when it starts: one per bucket, except that a bucket summed at once gives
// each span of 1 MiB or more a call of its own, in place (packing it would cost more than
// the call). A bucket over a group of one rank counts nothing and makes no MPI call (the
// counters' rule: core/counters.hpp). Open MPI advances a nonblocking collective only inside MPI
// calls, hence poll(): backward calls it after each node.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/datatype.hpp>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp::detail {

/// @brief One flat buffer of values of one type, summed over one group of ranks by one
/// MPI_Iallreduce. The spans added to it belong to their callers, who leave them alone
/// between add() and wait(). A bucket of one span is reduced in place (no copies).
class allreduce_bucket {
 public:
  // group: the group's communicator (MPI_COMM_NULL on a planned mesh, where the bucket is
  // counted and not summed), p its size
  allreduce_bucket(MPI_Comm group, std::size_t p, MPI_Datatype type, std::size_t value_size,
                   counters& c, call_site site)
      : group_(group),
        p_(p),
        type_(type),
        value_size_(value_size),
        counters_(&c),
        mask_(site.mask),
        site_(site) {}
  allreduce_bucket(const allreduce_bucket&) = delete;
  allreduce_bucket& operator=(const allreduce_bucket&) = delete;
  // a bucket in flight is finished before its spans can go away (one never started is not
  // started here: a destructor runs on one rank's schedule, a collective needs all ranks')
  ~allreduce_bucket() {
    if (in_flight_) wait_quietly(request_);  // nothing to report to from a destructor
  }

  MPI_Comm group() const { return group_; }
  unsigned mask() const { return mask_; }
  MPI_Datatype type() const { return type_; }
  bool started() const { return started_; }
  std::size_t bytes() const { return values_ * value_size_; }

  // add(data, count): count values at data join the sum (before start())
  void add(void* data, std::size_t count) {
    spans_.push_back({static_cast<std::byte*>(data), count});
    values_ += count;
  }

  // forget(data): the span at data is about to go away (its gradient was cleared or its node
  // destroyed): a bucket in flight finishes first (MPI may be writing there); one not yet
  // started sums zeros in its place, so every rank still sends the same count. Never throws.
  void forget(const void* data) noexcept {
    if (in_flight_ && wait_quietly(request_)) finish();
    for (auto* list : {&spans_, &flat_spans_}) {
      for (auto& s : *list) {
        if (s.data == data) s.data = nullptr;
      }
    }
  }

  // start(): counts the collective, packs the spans, starts the nonblocking allreduce.
  // start(now): the same, but summed at once with the blocking MPI_Allreduce (see sum_now)
  void start(bool now = false) {
    if (started_) return;
    started_ = true;
    if (p_ == 1 || values_ == 0) {
      record(values_);
      return;
    }
    if (now || values_ > mpi_count_limit) {  // (more than one call carries: in pieces, at once)
      sum_now();
      return;
    }
    record(values_);
    if (group_ == MPI_COMM_NULL) return;  // planned: counted only
    void* data = spans_.front().data;
    if (spans_.size() > 1 || !data) data = pack(spans_);
    site_.count = values_;
    before_collective(group_, site_);
    checked(
        MPI_Iallreduce(MPI_IN_PLACE, data, as_count(values_), type_, MPI_SUM, group_, &request_),
        "MPI_Iallreduce", site_);
    in_flight_ = true;
  }

  // poll(): one MPI_Test, which lets the reduction advance; true once it is complete
  bool poll() {
    if (!in_flight_) return started_;
    int done = 0;
    checked(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test", site_);
    if (done) finish();
    return done != 0;
  }

  // wait(): sums the bucket now if it has not started, or waits for its sums; then they are
  // in the spans
  void wait() {
    start(true);
    if (!in_flight_) return;
    checked(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait", site_);
    finish();
  }

 private:
  // A span at least this large is summed where it lies by a call of its own when the bucket is
  // summed at once: packing it would copy it twice (in and out), which took 0.25 ms for the
  // MNIST network's 3.2 MB first-layer gradient on the 2-core test machine, as long as the
  // allreduce itself, against about 20 us for one more call.
  static constexpr std::size_t own_call_bytes = std::size_t{1} << 20;

  void record(std::size_t values) {
    const auto scope = counters_->operation([] {
      return operation_descriptor{"gradient buckets", operation_kind::gradient_sums, {}, {}, false};
    });
    const auto p = static_cast<std::uint64_t>(p_);
    counters_->record(collective::allreduce, mask_, values,
                      2 * (p - 1) * static_cast<std::uint64_t>(values * value_size_) / p);
  }

  // pack(spans): the spans, one after another, in flat_ (zeros for a forgotten one)
  template <class Spans>
  void* pack(const Spans& spans) {
    std::size_t total = 0;
    for (const auto& s : spans) total += s.count * value_size_;
    flat_ = std::make_unique<std::byte[]>(total);
    flat_spans_.assign(spans.begin(), spans.end());
    std::size_t at = 0;
    for (const auto& s : spans) {
      if (s.data)
        std::memcpy(flat_.get() + at, s.data, s.count * value_size_);
      else
        std::memset(flat_.get() + at, 0, s.count * value_size_);  // forgotten: zeros
      at += s.count * value_size_;
    }
    return flat_.get();
  }

  // sum_now(): the blocking MPI_Allreduce, which Open MPI 4.1 runs 2.2x faster than
  // MPI_Iallreduce + MPI_Wait for 3.2 MB on 2 ranks (0.32 against 0.72 ms): large spans
  // in place, one call each, the rest packed into one call. Every rank has the same spans.
  void sum_now() {
    std::vector<span> small;
    for (const auto& s : spans_) {
      if (s.data && s.count * value_size_ >= own_call_bytes) {
        record(s.count);
        if (group_ == MPI_COMM_NULL) continue;  // planned: counted only
        site_.count = s.count;
        allreduce_in_place(group_, s.data, s.count, type_, value_size_, MPI_SUM, site_);
      } else {
        small.push_back(s);
      }
    }
    if (small.empty()) return;
    std::size_t count = 0;
    for (const auto& s : small) count += s.count;
    record(count);
    if (group_ == MPI_COMM_NULL) return;
    void* data = pack(small);
    site_.count = count;
    allreduce_in_place(group_, data, count, type_, value_size_, MPI_SUM, site_);
    finish();
  }

  struct span {
    std::byte* data;
    std::size_t count;
  };
  // finish(): the sums back from flat_ into the packed spans that are still there
  void finish() {
    in_flight_ = false;
    if (!flat_) return;
    std::size_t at = 0;
    for (const auto& s : flat_spans_) {
      if (s.data) std::memcpy(s.data, flat_.get() + at, s.count * value_size_);
      at += s.count * value_size_;
    }
    flat_.reset();
    flat_spans_.clear();
  }

  MPI_Comm group_;  // the mesh keeps the communicator
  std::size_t p_;
  MPI_Datatype type_;
  std::size_t value_size_;
  counters* counters_;
  unsigned mask_;
  call_site site_;  // for messages and the debug mode's fingerprints
  std::vector<span> spans_;
  std::size_t values_ = 0;
  std::unique_ptr<std::byte[]> flat_;
  std::vector<span> flat_spans_;  // what flat_ holds, in order
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool started_ = false;
  bool in_flight_ = false;
};

/// @brief The buckets of one backward pass: one open bucket per group and value type, started
/// when it reaches the size limit or at flush(), in the order they fill.
class bucket_queue {
 public:
  // bucket_queue(limit_bytes): a bucket starts once it holds at least limit_bytes (0: every
  // gradient is its own bucket, started at once)
  explicit bucket_queue(std::size_t limit_bytes) : limit_(limit_bytes) {}
  bucket_queue(const bucket_queue&) = delete;
  bucket_queue& operator=(const bucket_queue&) = delete;
  // an unfinished pass (an exception) leaves its open buckets unstarted: their owners start
  // them when they wait, as every rank does alike
  ~bucket_queue() = default;

  // add(mesh, mask, values): the values (a gradient's local slice: partial sums over the mesh
  // dims in mask) join a bucket; the bucket is returned for the owner to wait on
  template <class Mesh, class T>
  std::shared_ptr<allreduce_bucket> add(const Mesh& m, unsigned mask, std::span<T> values) {
    // A bucket stays within one MPI call's count where it can; a gradient larger than that
    // alone is summed in pieces, with the blocking allreduce (allreduce_bucket::start)
    const std::size_t most = mpi_count_limit;
    // the mesh keeps one communicator per set of mesh dims: the same group, the same handle (a
    // planned mesh has none: its buckets are told apart by their mesh dims)
    const MPI_Comm group = m.planning() ? MPI_COMM_NULL : MPI_Comm(m.communicator(mask));
    const MPI_Datatype type = boost::mpi::get_mpi_datatype<T>();
    std::shared_ptr<allreduce_bucket> b;
    for (const auto& o : open_) {
      // (a bucket waited for early, by its owner, has started: it takes no more)
      if (!o->started() && o->group() == group && o->mask() == mask && o->type() == type) {
        b = o;
        break;
      }
    }
    if (b && b->bytes() / sizeof(T) + values.size() > most) {
      start(b);  // full as far as MPI counts go
      b.reset();
    }
    if (!b) {
      b = std::make_shared<allreduce_bucket>(
          group, static_cast<std::size_t>(m.group_size(mask)), type, sizeof(T), m.counters(),
          call_site{"allreduce (gradient bucket)", mask, mesh_names<Mesh>, type_name<T>(), 0});
      open_.push_back(b);
    }
    b->add(values.data(), values.size());
    if (b->bytes() >= limit_) start(b);
    return b;
  }

  // poll(): lets every started bucket advance
  void poll() {
    for (std::size_t i = 0; i < running_.size();) {
      if (running_[i]->poll()) {
        running_[i] = std::move(running_.back());
        running_.pop_back();
      } else {
        ++i;
      }
    }
  }

  // flush(): sums every open bucket, in the order they were opened: at once (the blocking
  // allreduce), since nothing of the pass is left to overlap them with
  void flush() {
    auto open = std::move(open_);
    open_.clear();
    for (auto& b : open) b->start(true);
  }

 private:
  void start(const std::shared_ptr<allreduce_bucket>& b) {
    std::erase(open_, b);
    b->start();
    running_.push_back(b);
  }

  std::size_t limit_;
  std::vector<std::shared_ptr<allreduce_bucket>> open_;
  std::vector<std::shared_ptr<allreduce_bucket>> running_;
};

}  // namespace meshpp::detail
