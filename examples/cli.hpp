// cli.hpp — the examples' one command-line convention (docs/training.md, "The examples' command
// line"). Each program declares its flags, each bound to a variable whose value is the default:
//
//   examples::cli cli("mnist", "trains a classifier on Fashion-MNIST");
//   cli.add("--batch", o.batch, "examples per step");
//   cli.add("--data", o.data, "the Fashion-MNIST directory", "DIR");
//   cli.choose("--layout", o.layout, {"data", "model", "data+model", "auto"}, "the layout");
//   cli.add("--json", o.json, "stdout JSON lines only");  // a bool: a switch
//   cli.add("--n", o.sizes, "matrix sizes");  // a std::vector: a list (below)
//   cli.parse(argc, argv);
//   if (o.batch == 0) cli.fail("--batch must be positive");
//
// `--key value` and `--key=value`; -h or --help prints every flag with its default and meaning on
// rank 0 and exits 0; an unknown flag, a missing or bad value, or fail() prints one line on
// stderr from rank 0 and exits 2 on every rank. Every rank reads the same arguments, so every
// rank reaches the same verdict with no communication; MPI, if up, is finalized before the exit,
// so the exit is a clean one (mpiexec reports the status 2 of a run unless run with -q).
// A list flag (a std::vector of integers, or choose() into one of names) takes several values,
// comma-separated or the flag given again (--n 256,512 or --n 256 --n 512), each checked alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

namespace examples {

class cli {
 public:
  // summary: a line or two under the usage line of --help
  cli(std::string program, std::string summary)
      : program_(std::move(program)), summary_(std::move(summary)) {}

  // a switch: present, true (its default is the variable's value, normally false)
  void add(const char* name, bool& v, const char* help) {
    flags_.push_back({name, "", help, v ? "on" : "off", nullptr, &v});
  }
  // an integer; unsigned ones take digits only
  template <std::integral T>
  requires(!std::same_as<T, bool>) void add(const char* name, T& v, const char* help,
                                            const char* metavar = "N") {
    flags_.push_back({name, metavar, help, std::to_string(v),
                      [this, name, &v](const std::string& s) { v = integer<T>(name, s); }});
  }
  // a finite number
  void add(const char* name, double& v, const char* help, const char* metavar = "X") {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    flags_.push_back(
        {name, metavar, help, text, [this, name, &v](const std::string& s) { v = real(name, s); }});
  }
  // any text
  void add(const char* name, std::string& v, const char* help, const char* metavar = "TEXT") {
    flags_.push_back(
        {name, metavar, help, v.empty() ? "none" : v, [&v](const std::string& s) { v = s; }});
  }
  // one of `allowed`
  void choose(const char* name, std::string& v, std::initializer_list<const char*> allowed,
              const char* help) {
    std::vector<std::string> names(allowed.begin(), allowed.end());
    flags_.push_back({name, alternatives(names), help, v,
                      [this, name, names, &v](const std::string& s) { v = pick(name, names, s); }});
  }

  // A list: --key 1,2 or --key 1 --key 2 (or both); each element is checked as the one-value
  // flag of its kind checks it. The vector's elements are the default, which the first --key
  // given replaces; later ones add to it.
  // a list of integers; unsigned ones take digits only
  template <std::integral T>
  requires(!std::same_as<T, bool>) void add(const char* name, std::vector<T>& v, const char* help,
                                            const char* metavar = "N") {
    std::vector<std::string> shown;
    shown.reserve(v.size());
    for (const T& x : v) shown.push_back(std::to_string(x));
    list(name, v, help, metavar, shown,
         [this, name](const std::string& s) { return integer<T>(name, s); });
  }
  // a list of names, each one of `allowed`
  void choose(const char* name, std::vector<std::string>& v,
              std::initializer_list<const char*> allowed, const char* help) {
    std::vector<std::string> names(allowed.begin(), allowed.end());
    list(name, v, help, alternatives(names), v,
         [this, name, names](const std::string& s) { return pick(name, names, s); });
  }

  // reads the arguments into the declared variables; exits on --help (0) or an error (2)
  void parse(int argc, char** argv) {
    for (int at = 1; at < argc; ++at) {
      std::string arg = argv[at];
      if (arg == "-h" || arg == "--help") help();
      std::string value;
      bool has_value = false;
      if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg.resize(eq);
        has_value = true;
      }
      const auto f =
          std::find_if(flags_.begin(), flags_.end(), [&](const flag& x) { return arg == x.name; });
      if (f == flags_.end())
        fail(arg.rfind("-", 0) == 0 ? "unknown flag '" + arg + "'"
                                    : "unexpected argument '" + arg + "'");
      if (f->set_switch) {
        if (has_value) fail(arg + " takes no value");
        *f->set_switch = true;
        continue;
      }
      if (!has_value) {
        if (at + 1 >= argc) fail(arg + " needs a value (" + f->metavar + ")");
        value = argv[++at];
      }
      f->set(value);
    }
  }

  // a bad combination found after parse(): one line from rank 0, exit status 2 everywhere
  [[noreturn]] void fail(const std::string& what) const {
    if (rank() == 0) {
      std::string line = program_ + ": " + what + " (try --help)";
      std::replace(line.begin(), line.end(), '\n', ' ');
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    finish(2);
  }

  // what --help prints
  std::string usage() const {
    std::string out = "usage: " + program_ + " [options]   (under MPI: mpiexec -n P " + program_ +
                      " [options])\n" + summary_ + "\n\noptions (--key value or --key=value):\n";
    std::size_t width = 10;  // the flags' column, as wide as its widest entry up to 22
    for (const auto& f : flags_) width = std::max(width, std::min<std::size_t>(left(f).size(), 22));
    const auto pad = [&](const std::string& l) {
      return "  " + l + std::string(l.size() < width ? width + 2 - l.size() : 2, ' ');
    };
    for (const auto& f : flags_) out += pad(left(f)) + f.help + " (default: " + f.fallback + ")\n";
    out += pad("-h, --help") + "print this and exit\n";
    return out;
  }

 private:
  struct flag {
    std::string name, metavar, help, fallback;
    std::function<void(const std::string&)> set;
    bool* set_switch = nullptr;
  };
  static std::string left(const flag& f) {
    return f.metavar.empty() ? f.name : f.name + " " + f.metavar;
  }

  static bool mpi_up() {
    int up = 0, down = 0;
    return MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS &&
           !down;
  }
  static int rank() {
    int r = 0;
    if (mpi_up() && MPI_Comm_rank(MPI_COMM_WORLD, &r) != MPI_SUCCESS) r = 0;
    return r;
  }
  // every rank gets here with the same arguments: MPI ends everywhere, then the exit
  [[noreturn]] static void finish(int status) {
    std::fflush(stdout);
    if (mpi_up() && MPI_Finalize() != MPI_SUCCESS) std::exit(1);
    std::exit(status);
  }
  [[noreturn]] void help() const {
    if (rank() == 0) std::fputs(usage().c_str(), stdout);
    finish(0);
  }

  static std::string alternatives(const std::vector<std::string>& names) {
    std::string metavar;
    for (const auto& a : names) metavar += (metavar.empty() ? "" : "|") + a;
    return metavar;
  }
  // s if it is one of names, else the error naming them
  std::string pick(const char* name, const std::vector<std::string>& names,
                   const std::string& s) const {
    if (std::find(names.begin(), names.end(), s) == names.end()) {
      std::string list;
      for (std::size_t i = 0; i < names.size(); ++i)
        list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
      fail(std::string(name) + " must be " + list + ", not '" + s + "'");
    }
    return s;
  }
  // a list flag: its --help entry (metavar[,...], the default `shown` joined by commas) and
  // what each value given does: split at the commas, each element read by `read`
  template <class T, class Read>
  void list(const char* name, std::vector<T>& v, const char* help, const std::string& metavar,
            const std::vector<std::string>& shown, Read read) {
    std::string fallback;
    for (const auto& x : shown) fallback += (fallback.empty() ? "" : ",") + x;
    flags_.push_back({name, metavar + "[,...]",
                      std::string(help) + " (several: comma-separated or the flag again)",
                      fallback.empty() ? "none" : fallback,
                      [this, name, &v, read, given = false](const std::string& s) mutable {
                        if (!given) v.clear();  // the first one given replaces the default
                        given = true;
                        for (std::size_t from = 0;;) {
                          const std::size_t comma = s.find(',', from);
                          const std::string element = s.substr(from, comma - from);
                          if (element.empty())
                            fail(std::string(name) + " has an empty element: '" + s + "'");
                          v.push_back(read(element));
                          if (comma == std::string::npos) break;
                          from = comma + 1;
                        }
                      }});
  }

  template <class T>
  T integer(const char* name, const std::string& v) const {
    const bool negative = std::is_signed_v<T> && !v.empty() && v[0] == '-';
    const std::string digits = negative ? v.substr(1) : v;
    const bool ok = !digits.empty() && std::all_of(digits.begin(), digits.end(),
                                                   [](char ch) { return ch >= '0' && ch <= '9'; });
    const char* what = std::is_signed_v<T> ? "an integer" : "a non-negative integer";
    if (!ok) fail(std::string(name) + " needs " + what + ", not '" + v + "'");
    try {
      if constexpr (std::is_signed_v<T>) {
        const long long x = std::stoll(v);
        if (x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max())
          return static_cast<T>(x);
      } else {
        const unsigned long long x = std::stoull(v);
        if (x <= std::numeric_limits<T>::max()) return static_cast<T>(x);
      }
    } catch (const std::exception&) {
    }
    fail(std::string(name) + " is out of range: '" + v + "'");
  }
  double real(const char* name, const std::string& v) const {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (v.empty() || used != v.size() || !std::isfinite(x))
      fail(std::string(name) + " needs a number, not '" + v + "'");
    return x;
  }

  std::string program_;
  std::string summary_;
  std::vector<flag> flags_;
};

// The flags of the examples that save and resume (mnist, transformer), one name and meaning in
// each. add_checkpoint_flags(cli, file, every, resume) declares them; check_checkpoint_flags
// after parse(): --resume and --checkpoint-every need --checkpoint, and --checkpoint a build
// with parallel HDF5 (the example's MESHPP_EXAMPLE_CHECKPOINTS).
inline void add_checkpoint_flags(cli& flags, std::string& file, std::size_t& every, bool& resume) {
  flags.add("--checkpoint", file, "a file saved every --checkpoint-every steps and at the end",
            "FILE");
  flags.add("--checkpoint-every", every, "steps between checkpoints (0: at the end only)");
  flags.add("--resume", resume, "start from --checkpoint (any layout, any number of ranks)");
}
inline void check_checkpoint_flags(const cli& flags, const std::string& file, std::size_t every,
                                   bool resume) {
  if ((resume || every) && file.empty())
    flags.fail("--resume and --checkpoint-every need --checkpoint FILE");
#ifndef MESHPP_EXAMPLE_CHECKPOINTS
  if (!file.empty())
    flags.fail("built without parallel HDF5 (Debian: libhdf5-openmpi-dev): no --checkpoint");
#endif
}

}  // namespace examples
