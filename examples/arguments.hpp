// arguments.hpp — the examples' command-line reader: one option at a time, each value checked,
// a bad one a meshpp::error naming the program, the option and the value. Every rank reads the
// same arguments, so every rank throws the same error before any communication.
//
//   examples::arguments args("mnist", "usage: mnist [--batch B] ...", argc, argv);
//   while (args.next()) {
//     if (args.is("--batch")) o.batch = args.count();
//     else if (args.is("--learning-rate")) o.learning_rate = args.real();
//     else if (args.is("--json")) o.json = true;
//     else args.unknown();
//   }
//
// --help is the reader's own: rank 0 prints the usage, every rank ends MPI, and the program
// exits with status 0 (under mpiexec the usage shows once and the run is not an error).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>

#include <mpi.h>

#include <meshpp/core/error.hpp>

namespace examples {

class arguments {
 public:
  // usage: what --help prints, the lines after the first indented by the caller
  arguments(std::string program, std::string usage, int argc, char** argv)
      : program_(std::move(program)), usage_(std::move(usage)), argc_(argc), argv_(argv) {}

  // moves to the next option; false when there is none. --help shows the usage and exits.
  bool next() {
    if (++at_ >= argc_) return false;
    option_ = argv_[at_];
    if (option_ == "--help") help();
    return true;
  }
  const std::string& option() const { return option_; }
  bool is(const char* name) const { return option_ == name; }

  // the option's value, as given
  std::string text() {
    if (at_ + 1 >= argc_) fail("needs a value");
    return argv_[++at_];
  }
  // the option's value, a non-negative integer
  std::size_t count() {
    const std::string v = text();
    std::size_t used = 0;
    unsigned long long x = 0;
    try {
      x = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const bool digits = !v.empty() && std::all_of(v.begin(), v.end(),
                                                  [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits || used != v.size()) fail("needs a non-negative integer, not '" + v + "'");
    return static_cast<std::size_t>(x);
  }
  // the option's value, a finite number
  double real() {
    const std::string v = text();
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || v.empty() || !std::isfinite(x)) fail("needs a number, not '" + v + "'");
    return x;
  }
  // the option's value, one of `allowed`
  std::string choice(std::initializer_list<const char*> allowed) {
    const std::string v = text();
    std::string names;
    for (const char* a : allowed) {
      if (v == a) return v;
      names += (names.empty() ? "" : ", ") + std::string(a);
    }
    fail("must be one of " + names + ", not '" + v + "'");
  }
  // the current option is not one the program knows
  [[noreturn]] void unknown() const {
    throw meshpp::error(program_ + ": unknown argument '" + option_ + "' (try --help)");
  }

 private:
  // rank 0 prints the usage; MPI, if up, ends on every rank (every rank reads the same
  // arguments, so all of them get here); then the program exits with status 0
  [[noreturn]] void help() const {
    int up = 0, down = 0, rank = 0;
    const bool mpi =
        MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS && !down;
    if (mpi && MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) rank = 0;
    if (rank == 0) {
      std::fputs(usage_.c_str(), stdout);
      if (usage_.empty() || usage_.back() != '\n') std::fputc('\n', stdout);
      std::fflush(stdout);
    }
    if (mpi && MPI_Finalize() != MPI_SUCCESS) std::exit(1);
    std::exit(0);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw meshpp::error(program_ + ": " + option_ + " " + what);
  }

  std::string program_;
  std::string usage_;
  int argc_;
  char** argv_;
  int at_ = 0;
  std::string option_;
};

}  // namespace examples
