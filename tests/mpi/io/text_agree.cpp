// load_text(comm, path) fails together: a missing, empty or invalid file, or bad options, on
// any rank throws meshpp::error on every rank with the same message; good files give every
// rank the same corpus and the same sampled windows; ranks that read different text all throw.
#include <meshpp/io/text.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace mp = meshpp;
namespace fs = std::filesystem;
using meshpp_test::world;

using meshpp_test::temp_dir;

namespace {

// Writes content to path; false if that failed.
bool write_file(const std::string& path, std::string_view content) {
  std::ofstream f(path, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  return f.good();
}

// A text of 2550 characters, some of them multi-byte; a variant has one more.
std::string sample_text(int variant = 0) {
  std::string text;
  const std::string_view words[] = {"In ", "the ",    "beginning ", "Gód ",     "créated ",
                                    "— ",  "heaven ", "and ",       "earth.\n", "✓ "};
  for (std::size_t i = 0; i < 500; ++i) {
    text += words[(i * 7) % 10];
    if (i == 250 && variant != 0) text += "x";
  }
  return text;
}

mp::text_options small() { return {.validation_fraction = 0.1, .pad_to = 8, .min_characters = 1}; }

// Every rank's value equals rank 0's.
template <class T>
bool same_on_every_rank(const T& mine) {
  T root = mine;
  boost::mpi::broadcast(world(), root, 0);
  return meshpp_test::all_ranks(root == mine);
}

// load_text(world(), path, options) throws meshpp::error on every rank, with a message holding
// every part, and the same message on every rank.
bool fails_together(const std::string& path, const mp::text_options& options,
                    std::initializer_list<std::string_view> parts) {
  std::string message;
  const bool threw = meshpp_test::throws_with<mp::error>(
      [&] {
        try {
          (void)mp::load_text(world(), path, options);
        } catch (const mp::error& e) {
          message = e.what();
          throw;
        }
      },
      parts);
  const bool same = same_on_every_rank(message);
  if (!same) MESSAGE("rank " << world().rank() << ": a different message: " << message);
  return threw && same;
}

}  // namespace

TEST_CASE("load_text(comm, path): good files give every rank the same corpus and windows") {
  temp_dir dir;
  const std::string path = dir / "text.txt";
  const std::string text = sample_text();
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty() && write_file(path, text)));
  const mp::text_corpus c = mp::load_text(world(), path, small());
  CHECK_ALL_RANKS(c.character_count == 2550);  // 50 of each word, 51 characters in all
  CHECK_ALL_RANKS(c.decode(c.train_ids) + c.decode(c.validation_ids) == text);
  CHECK_ALL_RANKS(c.validation_ids.size() == c.character_count / 10);
  CHECK_ALL_RANKS(
      same_on_every_rank(std::vector<std::uint32_t>(c.alphabet.begin(), c.alphabet.end())));
  CHECK_ALL_RANKS(same_on_every_rank(c.train_ids));
  CHECK_ALL_RANKS(same_on_every_rank(c.validation_ids));
  CHECK_ALL_RANKS(c.vocab_size() % 8 == 0);
  for (std::uint64_t step = 0; step < 5; ++step) {
    CHECK_ALL_RANKS(same_on_every_rank(mp::window_starts(c.train_ids.size(), 65, 32, 7, step)));
  }
  CHECK_ALL_RANKS(same_on_every_rank(mp::evaluation_starts(c.validation_ids.size(), 65, 4)));
}

TEST_CASE("load_text(comm, path): a bad file or bad options on every rank fail together") {
  temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty()));
  // each rank names its own directory: the message must still be the same on every rank,
  // the lowest failing rank's (rank 0's here)
  std::string root_dir = dir.path.string();
  boost::mpi::broadcast(world(), root_dir, 0);
  const std::string root_path = (fs::path(root_dir) / "missing.txt").string();

  const std::string missing = dir / "missing.txt";
  CHECK(fails_together(missing, small(),
                       {"meshpp::load_text: ", root_path + ": no such file.",
                        "bible-kjv and bible-kjv-text", "bible -f gen1:1-rev22:21"}));

  const std::string empty = dir / "empty.txt";
  REQUIRE(meshpp_test::all_ranks(write_file(empty, "")));
  CHECK(fails_together(empty, small(), {"meshpp::load_text: ", ": is empty (0 bytes)"}));

  const std::string invalid = dir / "invalid.txt";
  REQUIRE(meshpp_test::all_ranks(write_file(invalid, "line one\nline \xC3\x28 two\n")));
  CHECK(fails_together(invalid, small(),
                       {"meshpp::load_text: ", ": invalid UTF-8 at byte offset 14 (line 2)"}));

  const std::string good = dir / "good.txt";
  REQUIRE(meshpp_test::all_ranks(write_file(good, sample_text())));
  CHECK_ALL_RANKS(mp::load_text(world(), good).character_count == 2550);  // the defaults
  mp::text_options bad_fraction = small();
  bad_fraction.validation_fraction = 1;
  CHECK(fails_together(good, bad_fraction,
                       {"meshpp::load_text: ", ": bad options: validation_fraction = 1 is not"}));
  mp::text_options bad_pad = small();
  bad_pad.pad_to = 0;
  CHECK(fails_together(good, bad_pad, {": bad options: pad_to = 0"}));
  mp::text_options too_long = small();
  too_long.min_characters = 1000000;
  CHECK(fails_together(good, too_long, {": too short: ", "min_characters = 1000000"}));
}

TEST_CASE("load_text(comm, path): a problem on one rank throws its message on every rank") {
  const int n = world().size();
  for (const int bad_rank : {0, n - 1}) {
    CAPTURE(bad_rank);
    const bool bad = world().rank() == bad_rank;
    temp_dir dir;
    const std::string path = dir / "text.txt";
    REQUIRE(meshpp_test::all_ranks(!dir.path.empty() && write_file(path, sample_text())));
    std::string bad_path = path;
    boost::mpi::broadcast(world(), bad_path, bad_rank);

    // a missing file on one rank
    CHECK(
        fails_together(bad ? dir / "nowhere.txt" : path, small(), {"no such file", "nowhere.txt"}));
    // invalid UTF-8 on one rank
    REQUIRE(meshpp_test::all_ranks(!bad || write_file(path, "abc\xFF")));
    CHECK(fails_together(path, small(), {bad_path + ": invalid UTF-8 at byte offset 3 (line 1)"}));
    // an empty file on one rank
    REQUIRE(meshpp_test::all_ranks(!bad || write_file(path, "")));
    CHECK(fails_together(path, small(), {bad_path + ": is empty"}));
    // bad options on one rank
    REQUIRE(meshpp_test::all_ranks(write_file(path, sample_text())));
    mp::text_options options = small();
    if (bad) options.pad_to = 0;
    CHECK(fails_together(path, options, {bad_path + ": bad options: pad_to = 0"}));
  }
}

TEST_CASE("load_text(comm, path): ranks that read different text all throw") {
  if (world().size() == 1) return;  // one rank cannot differ from itself
  temp_dir dir;
  const std::string path = dir / "text.txt";
  const int variant = world().rank() == 1 ? 1 : 0;  // rank 1's text has one more character
  REQUIRE(meshpp_test::all_ranks(!dir.path.empty() && write_file(path, sample_text(variant))));
  CHECK(fails_together(path, small(), {"meshpp::load_text: ", ": ranks read different text"}));

  // the same text under different options is different data too
  REQUIRE(meshpp_test::all_ranks(write_file(path, sample_text())));
  mp::text_options options = small();
  if (world().rank() == 1) options.validation_fraction = 0.2;
  CHECK(fails_together(path, options,
                       {": ranks read different text, or were given different "
                        "options"}));
}
