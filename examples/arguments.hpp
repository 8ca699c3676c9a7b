// arguments.hpp — the examples' command-line reader: one option at a time, each value checked,
// a bad one a meshpp::error naming the program, the option and the value. Every rank reads the
// same arguments, so every rank throws the same error before any communication.
//
//   examples::arguments args("mnist", argc, argv);
//   while (args.next()) {
//     if (args.is("--batch")) o.batch = args.count();
//     else if (args.is("--learning-rate")) o.learning_rate = args.real();
//     else if (args.is("--json")) o.json = true;
//     else args.unknown();
//   }
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <string>

#include <meshpp/core/error.hpp>

namespace examples {

class arguments {
 public:
  arguments(std::string program, int argc, char** argv)
      : program_(std::move(program)), argc_(argc), argv_(argv) {}

  // moves to the next option; false when there is none
  bool next() {
    if (++at_ >= argc_) return false;
    option_ = argv_[at_];
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
  [[noreturn]] void fail(const std::string& what) const {
    throw meshpp::error(program_ + ": " + option_ + " " + what);
  }

  std::string program_;
  int argc_;
  char** argv_;
  int at_ = 0;
  std::string option_;
};

}  // namespace examples
