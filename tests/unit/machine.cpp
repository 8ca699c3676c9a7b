// The machine model of layout search (plan/machine.hpp): save then load gives an equal model,
// bit for bit; every malformed file is an error naming the file and the line; the fit recovers
// alpha and beta from synthetic timings; seconds() is 0 at p = 1, follows the measured times,
// never falls as bytes grow and interpolates between group sizes; the default model is sane.
#include <meshpp/plan/machine.hpp>

#include <array>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::temp_dir;
using mp::collective;

namespace {

constexpr std::array<collective, mp::collective_kinds> every_kind{
    collective::allreduce, collective::allgather, collective::alltoall, collective::reduce_scatter,
    collective::broadcast, collective::permute,   collective::gather};

// a model whose numbers need all 17 digits (1/3, 0.1), with and without measured times
mp::machine_model awkward_model() {
  mp::machine_model m;
  m.source = "unit test: values chosen to need every digit";
  m.gemm_flops_per_second = 1e11 / 3;
  m.stream_bytes_per_second = 0.1 * 1e11;
  m.memory_bytes_per_rank = 3.0 * (1ull << 30);
  m.set(collective::allreduce, 2, {1.0 / 3 * 1e-6, 0.1e-9, 0.07});
  m.set(collective::allreduce, 8, {2.0 / 3 * 1e-6, 0.3e-9, 0},
        {{8, 1e-6 / 3}, {4096, 4e-6 / 7}, {1 << 20, 1e-4 / 3}});
  m.set(collective::gather, 4, {1e-7, std::nextafter(1e-10, 1.0), 0.5});
  return m;
}

void write_file(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

// the first lines of a well-formed file, to which each bad case adds one problem
const std::string header = "meshpp-machine 1\n# a comment\n\ngemm.flops_per_second 1e11\n";

bool load_throws(const temp_dir& dir, const std::string& text,
                 std::initializer_list<std::string_view> parts) {
  const std::string path = dir / "bad.txt";
  write_file(path, text);
  return meshpp_test::throws_with<mp::error>([&] { (void)mp::machine_model::load(path); }, parts);
}

}  // namespace

TEST_CASE("machine_model: save then load gives an equal model, bit for bit") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const mp::machine_model m = awkward_model();
  m.save(dir / "machine.txt");
  const mp::machine_model back = mp::machine_model::load(dir / "machine.txt");
  CHECK(back == m);
  CHECK(back.gemm_flops_per_second == m.gemm_flops_per_second);  // exact, not approximate
  CHECK(back.find(collective::allreduce, 2)->alpha == 1.0 / 3 * 1e-6);
  CHECK(back.source == m.source);
  CHECK(back.text() == m.text());
  REQUIRE(back.measured(collective::allreduce, 8).size() == 3);
  CHECK(back.measured(collective::allreduce, 8)[1].seconds == 4e-6 / 7);
  // the text is the documented format
  const std::string t = m.text();
  CHECK(t.rfind("meshpp-machine 1\n", 0) == 0);
  CHECK(t.find("\nallreduce.2.alpha ") != std::string::npos);
  CHECK(t.find("\nallreduce.8.seconds_at.1048576 ") != std::string::npos);
  CHECK(t.find("\nmemory.bytes_per_rank 3221225472\n") != std::string::npos);
  // a model differing in one number is not equal (the comparison sees every field)
  mp::machine_model other = m;
  other.set(collective::gather, 4, {1e-7, 1e-10, 0.5});
  CHECK(!(other == m));
}

TEST_CASE("machine_model: a bad file's error names the file and the line") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string path = dir / "bad.txt";
  // the well-formed base loads (so each case below fails for its own problem)
  std::istringstream base(header + "stream.bytes_per_second 1e10\n");
  CHECK_NOTHROW((void)mp::machine_model::parse(base, "base"));
  CHECK(load_throws(dir, "meshpp-machine 2\n", {path + ":1:", "format version"}));
  CHECK(load_throws(dir, "alpha 1\n", {path + ":1:", "not a meshpp machine file"}));
  CHECK(load_throws(dir, "", {path + ":1:", "empty file"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second fast\n",
                    {path + ":5:", "needs a number, not 'fast'"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second 1e10\nallreduce.2.alpah 1e-6\n",
                    {path + ":6:", "unknown key 'allreduce.2.alpah'"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second 1e10\nallreduc.2.alpha 1e-6\n",
                    {path + ":6:", "unknown key 'allreduc.2.alpha'"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second 1e10\ngemm.flops_per_second 2e11\n",
                    {path + ":6:", "given twice (first on line 4)"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second 1e10\nallreduce.1.alpha 1e-6\n",
                    {path + ":6:", "group size '1' is not an integer >= 2"}));
  CHECK(load_throws(dir, header + "stream.bytes_per_second 1e10\nallreduce.2.beta -1e-9\n",
                    {path + ":6:", "finite and >= 0"}));
  CHECK(load_throws(dir,
                    header + "stream.bytes_per_second 1e10\n# x\nallreduce.2.alpha 1e-6\n"
                             "gather.2.alpha 1e-6\ngather.2.beta 1e-9\n",
                    {path + ":7:", "allreduce.2 has an alpha but no beta"}));
  CHECK(load_throws(dir,
                    header + "stream.bytes_per_second 1e10\nallreduce.2.alpha 1e-6\n"
                             "allreduce.2.beta 1e-9\nallreduce.2.seconds_at.1e3x 1e-6\n",
                    {path + ":8:", "not a number of bytes"}));
  CHECK(load_throws(dir, header, {path + ":5:", "ends without stream.bytes_per_second"}));
  CHECK(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::machine_model::load(dir / "missing.txt"); },
      {"cannot open", "missing.txt", "examples/calibrate"}));
}

TEST_CASE("fit_alpha_beta: recovers alpha and beta from synthetic timings") {
  const double alpha = 2.5e-6, beta = 1.0 / 7e9;  // 2.5 us, 7 GB/s
  std::vector<mp::timing_point> exact, noisy;
  int i = 0;
  for (double bytes = 8; bytes <= 16 << 20; bytes *= 2, ++i) {
    exact.push_back({bytes, alpha + beta * bytes});
    // +-4%, alternating: no systematic bias
    noisy.push_back({bytes, (alpha + beta * bytes) * (i % 2 ? 1.04 : 0.96)});
  }
  const mp::alpha_beta e = mp::fit_alpha_beta(exact);
  CHECK(e.alpha == doctest::Approx(alpha).epsilon(1e-9));
  CHECK(e.beta == doctest::Approx(beta).epsilon(1e-9));
  CHECK(e.residual < 1e-9);
  const mp::alpha_beta n = mp::fit_alpha_beta(noisy);
  CHECK(n.alpha == doctest::Approx(alpha).epsilon(0.05));
  CHECK(n.beta == doctest::Approx(beta).epsilon(0.05));
  CHECK(n.residual == doctest::Approx(0.04).epsilon(0.25));
  // small messages decide alpha even though large ones take 10^4 times longer: plain least
  // squares would leave alpha to the noise of the 16 MiB point
  CHECK(e.seconds(8) == doctest::Approx(alpha + 8 * beta).epsilon(1e-9));
  // a line whose best intercept is negative (-0.32 us): alpha is kept at 0 and beta refitted
  const std::vector<mp::timing_point> through_origin{{1000, 0.8e-6}, {2000, 2e-6}, {4000, 4.1e-6}};
  const mp::alpha_beta o = mp::fit_alpha_beta(through_origin);
  CHECK(o.alpha == 0);
  // sum(x / t) / sum(x^2 / t^2): the relative least-squares slope through the origin
  CHECK(o.beta == doctest::Approx(9.178489436209942e-10).epsilon(1e-9));
  // times that fall with size: beta is kept at 0
  const mp::alpha_beta f = mp::fit_alpha_beta(std::vector<mp::timing_point>{{8, 2e-6}, {64, 1e-6}});
  CHECK(f.beta == 0);
  CHECK(f.alpha > 1e-6);
  CHECK(f.alpha < 2e-6);
  // what cannot be fitted
  CHECK(meshpp_test::throws_with<mp::error>(
      [] {
        (void)mp::fit_alpha_beta(std::vector<mp::timing_point>{{8, 1e-6}, {8, 2e-6}});
      },
      {"two distinct sizes"}));
  CHECK(meshpp_test::throws_with<mp::error>(
      [] {
        (void)mp::fit_alpha_beta(std::vector<mp::timing_point>{{8, 0}, {16, 1e-6}});
      },
      {"times must be > 0"}));
}

TEST_CASE("monotone_in_bytes: the nearest non-decreasing times; sorted input unchanged") {
  const auto m = mp::monotone_in_bytes({{64, 4}, {8, 1}, {16, 3}, {32, 2}});
  REQUIRE(m.size() == 4);
  CHECK(m[0] == mp::timing_point{8, 1});
  CHECK(m[1] == mp::timing_point{16, 2.5});  // 3 and 2 pooled
  CHECK(m[2] == mp::timing_point{32, 2.5});
  CHECK(m[3] == mp::timing_point{64, 4});
  const std::vector<mp::timing_point> sorted{{8, 1.0 / 3}, {16, 1.0 / 3}, {32, 0.7}};
  CHECK(mp::monotone_in_bytes(sorted) == sorted);
}

TEST_CASE("machine_model::seconds: 0 at p = 1, never falling in bytes, measured times kept") {
  mp::machine_model m;
  m.gemm_flops_per_second = 1e11;
  m.stream_bytes_per_second = 1e10;
  // a line only at 2 ranks; measured times, one noisy (falls at 4096), at 8
  m.set(collective::allreduce, 2, {1e-6, 1e-10, 0});
  m.set(collective::allreduce, 8, {2e-6, 2e-10, 0},
        {{8, 2e-6}, {1024, 3e-6}, {4096, 2.5e-6}, {65536, 2e-5}, {1 << 20, 4e-4}});
  for (const collective c : every_kind) CHECK(m.seconds(c, 1, 1e6) == 0);
  CHECK(m.seconds(collective::allreduce, 2, 0) == doctest::Approx(1e-6));
  CHECK(m.seconds(collective::allreduce, 2, 1e6) == doctest::Approx(1e-6 + 1e-4));
  // at measured sizes the (monotone) measured times; between them, straight lines
  CHECK(m.seconds(collective::allreduce, 8, 65536) == doctest::Approx(2e-5));
  CHECK(m.seconds(collective::allreduce, 8, 1024) == doctest::Approx(2.75e-6));  // pooled
  CHECK(m.seconds(collective::allreduce, 8, (65536 + (1 << 20)) / 2.0) ==
        doctest::Approx((2e-5 + 4e-4) / 2));
  CHECK(m.seconds(collective::allreduce, 8, 0) == doctest::Approx(2e-6));         // below: latency
  CHECK(m.seconds(collective::allreduce, 8, 4 << 20) == doctest::Approx(16e-4));  // bandwidth
  // never falling in bytes, at every p (measured, interpolated, extrapolated both ways)
  for (const int p : {2, 3, 4, 5, 8, 16, 64}) {
    double before = 0;
    for (double bytes = 0; bytes < 8e6; bytes = bytes * 1.3 + 7) {
      const double t = m.seconds(collective::allreduce, p, bytes);
      CHECK(t >= before);
      CHECK(t > 0);
      before = t;
    }
  }
  // between measured group sizes: between their times; beyond: alpha grows with log p
  const double t2 = m.seconds(collective::allreduce, 2, 65536),
               t8 = m.seconds(collective::allreduce, 8, 65536),
               t4 = m.seconds(collective::allreduce, 4, 65536);
  CHECK(t4 > std::min(t2, t8));
  CHECK(t4 < std::max(t2, t8));
  CHECK(m.seconds(collective::allreduce, 64, 65536) ==
        doctest::Approx(2e-5 + 2e-6 * (6.0 / 3 - 1)));
  // what the model cannot price
  CHECK(meshpp_test::throws_with<mp::error>([&] { (void)m.seconds(collective::gather, 2, 100); },
                                            {"no figures for gather"}));
  CHECK(meshpp_test::throws_with<mp::error>([&] { (void)m.seconds(collective::allreduce, 2, -1); },
                                            {"bytes_sent", ">= 0"}));
  CHECK(meshpp_test::throws_with<mp::error>([&] { (void)m.seconds(collective::allreduce, 0, 8); },
                                            {"group size 0"}));
  CHECK(meshpp_test::throws_with<mp::error>(
      [&] {
        m.set(collective::allreduce, 2, {-1e-6, 1e-10, 0});
      },
      {"allreduce, 2", ">= 0"}));
  CHECK(meshpp_test::throws_with<mp::error>(
      [&] {
        m.set(collective::allreduce, 2, {1e-6, 1e-10, 0}, {{8, 1e-6}, {8, 2e-6}});
      },
      {"two measured times at 8 bytes"}));
  // the local rates
  CHECK(m.gemm_seconds(2e11) == doctest::Approx(2.0));
  CHECK(m.stream_seconds(5e9) == doctest::Approx(0.5));
  mp::machine_model empty;
  CHECK(meshpp_test::throws_with<mp::error>([&] { (void)empty.gemm_seconds(1); },
                                            {"gemm_seconds", "no positive rate"}));
}

TEST_CASE("machine_model::defaults: every kind priced at 2 ranks, plausible figures, says so") {
  const mp::machine_model d = mp::machine_model::defaults();
  CHECK(d.source.find("default") != std::string::npos);
  CHECK(d.source.find("examples/calibrate") != std::string::npos);
  for (const collective c : every_kind) {
    const mp::alpha_beta* line = d.find(c, 2);
    REQUIRE(line != nullptr);
    CHECK(line->alpha > 1e-8);  // 10 ns .. 100 us a call
    CHECK(line->alpha < 1e-4);
    CHECK(line->beta > 1e-12);  // 0.1 .. 1000 GB/s
    CHECK(line->beta < 1e-8);
    // 4 MiB sent: between 40 us and 40 ms on any machine meshpp may meet
    CHECK(d.seconds(c, 2, 4 << 20) > 4e-5);
    CHECK(d.seconds(c, 2, 4 << 20) < 4e-2);
    CHECK(d.seconds(c, 4, 4 << 20) > d.seconds(c, 2, 4 << 20) * 0.999);
  }
  // a 1024^3 sgemm between 1 ms and 1 s; a pass over 64 MiB between 0.1 ms and 1 s
  CHECK(d.gemm_seconds(2.0 * 1024 * 1024 * 1024) > 1e-3);
  CHECK(d.gemm_seconds(2.0 * 1024 * 1024 * 1024) < 1.0);
  CHECK(d.stream_seconds(64 << 20) > 1e-4);
  CHECK(d.stream_seconds(64 << 20) < 1.0);
  // defaults are what load_or_defaults gives without a file, and they survive a round trip
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  CHECK(mp::machine_model::load_or_defaults(dir / "none.txt") == d);
  d.save(dir / "defaults.txt");
  CHECK(mp::machine_model::load_or_defaults(dir / "defaults.txt") == d);
}
