// Text corpora: UTF-8 files read back as character ids and decoded exactly, ASCII and
// multi-byte alike; the alphabet padded to a multiple of pad_to; the validation part is the
// last characters or every k-th block; window sampling is a pure function of its arguments, in
// range and uniform; evaluation windows tile the text; every error names the file (or input) and
// the problem.
#include <meshpp/io/text.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace mp = meshpp;
namespace fs = std::filesystem;
using ids = std::vector<std::int32_t>;
using starts = std::vector<std::size_t>;

using meshpp_test::temp_dir;

namespace {

void write_file(const std::string& path, std::string_view content) {
  std::ofstream f(path, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  REQUIRE(f.good());
}

// options for small texts: no minimum length
mp::text_options small(double fraction = 0.25, std::size_t pad_to = 8) {
  return {.validation_fraction = fraction, .pad_to = pad_to, .min_characters = 1};
}

// a corpus of `text` written to a file of dir
mp::text_corpus corpus_of(const temp_dir& dir, std::string_view text,
                          const mp::text_options& options = small()) {
  const std::string path = dir / "corpus.txt";
  write_file(path, text);
  return mp::read_text(path, options);
}

template <class F>
bool throws(F&& f, std::initializer_list<std::string_view> parts) {
  return meshpp_test::throws_with<mp::error>(std::forward<F>(f), parts);
}

bool read_throws(const std::string& path, const mp::text_options& options,
                 std::initializer_list<std::string_view> parts) {
  return throws([&] { (void)mp::read_text(path, options); }, parts);
}

ids concat(const mp::text_corpus& c) {
  ids all = c.train_ids;
  all.insert(all.end(), c.validation_ids.begin(), c.validation_ids.end());
  return all;
}

}  // namespace

TEST_CASE("read_text: ASCII text round-trips through encode and decode") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string text = "In the beginning God created the heaven and the earth.\nAmen.\n";
  const mp::text_corpus c = corpus_of(dir, text);
  CHECK(c.path == dir / "corpus.txt");
  CHECK(c.character_count == text.size());
  // the alphabet: sorted, distinct, exactly the characters of the text
  CHECK(std::is_sorted(c.alphabet.begin(), c.alphabet.end()));
  CHECK(std::adjacent_find(c.alphabet.begin(), c.alphabet.end()) == c.alphabet.end());
  CHECK(std::set<char32_t>(c.alphabet.begin(), c.alphabet.end()) ==
        std::set<char32_t>(text.begin(), text.end()));
  CHECK(c.alphabet.front() == U'\n');
  // the ids are the text's, train then validation
  CHECK(c.encode(text) == concat(c));
  CHECK(c.decode(concat(c)) == text);
  CHECK(c.decode(c.train_ids) + c.decode(c.validation_ids) == text);
  CHECK(c.decode(c.encode("the earth")) == "the earth");
  CHECK(c.encode("").empty());
  CHECK(c.decode(ids{}).empty());
}

TEST_CASE("read_text: multi-byte UTF-8 round-trips, one id per code point") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string text = "héllo wörld — ✓ 𝄞\n";  // 2-, 3- and 4-byte sequences
  const mp::text_corpus c = corpus_of(dir, text);
  CHECK(c.character_count == 18);
  CHECK(c.alphabet == std::vector<char32_t>{U'\n', U' ', U'd', U'h', U'l', U'o', U'r', U'w', U'é',
                                            U'ö', U'—', U'✓', U'𝄞'});
  CHECK(c.vocab_size() == 16);
  CHECK(c.encode(text) == concat(c));
  CHECK(c.decode(concat(c)) == text);
  CHECK(c.encode("é✓𝄞") == ids{8, 11, 12});
  CHECK(c.decode(ids{12, 11, 8}) == "𝄞✓é");
}

TEST_CASE("vocab_size pads the alphabet to a multiple of pad_to; padding decodes to U+FFFD") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string letters = "abcdefghijklmnopq";
  for (std::size_t k = 1; k <= letters.size(); ++k) {
    CAPTURE(k);
    std::string text;
    for (int rep = 0; rep < 4; ++rep) text += letters.substr(0, k);
    const mp::text_corpus c = corpus_of(dir, text);
    REQUIRE(c.alphabet.size() == k);
    CHECK(c.vocab_size() == (k + 7) / 8 * 8);
    CHECK(c.vocab_size() % 8 == 0);
    CHECK(corpus_of(dir, text, small(0.25, 1)).vocab_size() == k);
    CHECK(corpus_of(dir, text, small(0.25, 3)).vocab_size() == (k + 2) / 3 * 3);
    // encode never produces padding ids
    for (const std::int32_t id : c.encode(text)) CHECK(static_cast<std::size_t>(id) < k);
  }
  const mp::text_corpus c = corpus_of(dir, "abcabcabc");  // 3 letters, vocab 8
  CHECK(c.decode(ids{0, 3, 7, 2}) ==
        "a\xEF\xBF\xBD\xEF\xBF\xBD"
        "c");
  CHECK(throws(
      [&] {
        (void)c.decode(ids{0, 8});
      },
      {"meshpp::text_corpus::decode: id 8 is not in [0, 8)", c.path}));
  CHECK(throws([&] { (void)c.decode(ids{-1}); }, {"id -1 is not in [0, 8)"}));
}

TEST_CASE("the validation part is the last floor(n * fraction) characters") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + (i * 7) % 26);
  for (const double fraction : {0.05, 0.1, 0.333, 0.5, 0.999}) {
    CAPTURE(fraction);
    const mp::text_corpus c = corpus_of(dir, text, small(fraction));
    const auto validation = static_cast<std::size_t>(std::floor(1000 * fraction));
    CHECK(c.validation_ids.size() == validation);
    CHECK(c.train_ids.size() == 1000 - validation);
    CHECK(c.character_count == 1000);
    CHECK(c.decode(c.validation_ids) == text.substr(1000 - validation));
    CHECK(c.decode(c.train_ids) == text.substr(0, 1000 - validation));
  }
  // the default options: 5%, at least 1024 characters
  text += std::string(1000, 'z');
  const mp::text_corpus d = corpus_of(dir, text, {});
  CHECK(d.validation_ids.size() == 100);
  CHECK(d.train_ids.size() == 1900);
  CHECK(d.pad_to == 8);
  // the split counts characters, not bytes
  const mp::text_corpus m = corpus_of(dir, "ééééééé✓✓✓", small(0.3));
  CHECK(m.decode(m.validation_ids) == "✓✓✓");
}

TEST_CASE("validation_block: every k-th block held out, spread over the whole text") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>('a' + (i * 7 + i / 26) % 26);
  for (const double fraction : {0.05, 0.1, 0.25, 0.3}) {
    for (const std::size_t block : {1, 7, 10, 33}) {
      CAPTURE(fraction);
      CAPTURE(block);
      mp::text_options o = small(fraction);
      o.validation_block = block;
      const mp::text_corpus c = corpus_of(dir, text, o);
      // the reference: block j is held out when floor((j + 1) f) > floor(j f)
      std::string train, validation;
      for (std::size_t j = 0; j * block < text.size(); ++j) {
        const bool held = std::floor(static_cast<double>(j + 1) * fraction) >
                          std::floor(static_cast<double>(j) * fraction);
        (held ? validation : train) += text.substr(j * block, block);
      }
      CHECK(c.decode(c.validation_ids) == validation);
      CHECK(c.decode(c.train_ids) == train);
      CHECK(c.character_count == 1000);
      // about the fraction, to within one block
      const double held = static_cast<double>(c.validation_ids.size());
      CHECK(std::abs(held - 1000 * fraction) <= static_cast<double>(block));
    }
  }
  // at 5% with blocks of 10: blocks 19, 39, ..., 99 (characters 190-199, ...)
  mp::text_options o = small(0.05);
  o.validation_block = 10;
  const mp::text_corpus c = corpus_of(dir, text, o);
  CHECK(c.validation_ids.size() == 50);
  CHECK(c.decode(std::vector<std::int32_t>(c.validation_ids.begin(),
                                           c.validation_ids.begin() + 10)) == text.substr(190, 10));
  // a block longer than the text: block 0 is not held out, so nothing is; an error naming it
  o.validation_block = 5000;
  CHECK(read_throws(dir / "corpus.txt", o,
                    {"too short to split", "validation_block = 5000", "validation_block = 0"}));
}

TEST_CASE("read_text reads the same corpus twice; equal files give equal corpora") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string text = "And God said, Let there be light: and there was light.\n";
  write_file(dir / "a.txt", text);
  write_file(dir / "b.txt", text);
  const mp::text_corpus a = mp::read_text(dir / "a.txt", small());
  CHECK(a == mp::read_text(dir / "a.txt", small()));
  mp::text_corpus b = mp::read_text(dir / "b.txt", small());
  CHECK(b.path != a.path);
  b.path = a.path;
  CHECK(a == b);
}

TEST_CASE("splitmix64 is the reference generator") {
  // Steele, Lea and Flood's splitmix64 from state 0 (as in Vigna's splitmix64.c)
  mp::detail::splitmix64 g{0};
  CHECK(g.next() == 0xe220a8397b1dcdafu);
  CHECK(g.next() == 0x6e789e6aa1b965f4u);
  CHECK(g.next() == 0x06c45d188009454fu);
  CHECK(g.next() == 0xf88bb8a8724c81ecu);
}

TEST_CASE("window_starts: a pure function of its arguments, in range") {
  const starts a = mp::window_starts(100000, 129, 64, 42, 7);
  CHECK(a.size() == 64);
  CHECK(a == mp::window_starts(100000, 129, 64, 42, 7));
  CHECK(a != mp::window_starts(100000, 129, 64, 42, 8));
  CHECK(a != mp::window_starts(100000, 129, 64, 43, 7));
  for (const std::size_t s : a) CHECK(s <= 100000 - 129);
  // a prefix of a longer draw: the stream is consumed in order
  const starts longer = mp::window_starts(100000, 129, 100, 42, 7);
  CHECK(starts(longer.begin(), longer.begin() + 64) == a);
  // pinned, so that a change of the stream (which changes every training run) shows here
  CHECK(mp::window_starts(1000, 10, 5, 1, 0) == starts{350, 822, 382, 884, 796});
  const starts pinned = mp::window_starts(1u << 20, 1, 4, 2024, 3);
  CHECK(pinned == starts{115690, 873249, 593270, 450241});
  // ... and is the documented one: splitmix64 from mix(mix(seed) ^ step), here with no
  // rejection since 2^20 divides 2^64
  auto g = mp::detail::splitmix64{
      mp::detail::splitmix64_mix(mp::detail::splitmix64_mix(2024) ^ std::uint64_t{3})};
  for (const std::size_t s : pinned) CHECK(s == g.next() % (1u << 20));

  CHECK(mp::window_starts(10, 10, 3, 5, 5) == starts{0, 0, 0});  // one place only
  CHECK(mp::window_starts(10, 3, 0, 5, 5).empty());
}

TEST_CASE("window_starts: every start is drawn, about equally often") {
  const std::size_t n = 20, window = 5, places = n - window + 1, draws = 160000;
  std::vector<std::size_t> counts(places, 0);
  for (std::uint64_t step = 0; step < draws / 100; ++step) {
    for (const std::size_t s : mp::window_starts(n, window, 100, 9, step)) ++counts.at(s);
  }
  const double expected = static_cast<double>(draws) / places;  // 10000
  for (std::size_t p = 0; p < places; ++p) {
    CAPTURE(p);
    CHECK(std::abs(static_cast<double>(counts[p]) - expected) < 5 * std::sqrt(expected));
  }
  // consecutive steps draw unrelated windows (not a shifted copy of the same stream)
  const starts s0 = mp::window_starts(1000000, 1, 8, 9, 0);
  const starts s1 = mp::window_starts(1000000, 1, 8, 9, 1);
  for (std::size_t i = 0; i + 1 < s0.size(); ++i) CHECK(s0[i + 1] != s1[i]);
}

TEST_CASE("window_starts: a window that does not fit throws") {
  CHECK(throws([] { (void)mp::window_starts(10, 11, 1, 0, 0); },
               {"meshpp::window_starts: a window of 11 ids does not fit in a text of 10 ids"}));
  CHECK(throws([] { (void)mp::window_starts(10, 0, 1, 0, 0); }, {"a window of 0 ids"}));
  CHECK(throws([] { (void)mp::window_starts(0, 1, 1, 0, 0); }, {"in a text of 0 ids"}));
}

TEST_CASE("evaluation_starts: non-overlapping windows tiling the text, or spread over it") {
  CHECK(mp::evaluation_starts(100, 10) == starts{0, 10, 20, 30, 40, 50, 60, 70, 80, 90});
  CHECK(mp::evaluation_starts(109, 10) == mp::evaluation_starts(100, 10));  // a tail < window
  CHECK(mp::evaluation_starts(100, 10, 10) == mp::evaluation_starts(100, 10));
  CHECK(mp::evaluation_starts(100, 10, 3) == starts{0, 30, 60});
  CHECK(mp::evaluation_starts(100, 10, 1) == starts{0});
  CHECK(mp::evaluation_starts(100, 10, 0).empty());
  CHECK(mp::evaluation_starts(9, 10).empty());
  CHECK(mp::evaluation_starts(10, 10) == starts{0});
  for (const std::size_t n : {1u, 7u, 128u, 1000u, 4097u}) {
    for (const std::size_t window : {1u, 3u, 129u}) {
      for (const std::size_t cap : {1u, 5u, 64u, 100000u}) {
        CAPTURE(n);
        CAPTURE(window);
        CAPTURE(cap);
        const starts s = mp::evaluation_starts(n, window, cap);
        CHECK(s.size() == std::min(n / window, cap));
        for (std::size_t i = 0; i < s.size(); ++i) {
          CHECK(s[i] % window == 0);
          CHECK(s[i] + window <= n);
          if (i > 0) {
            CHECK(s[i] >= s[i - 1] + window);  // in order, not overlapping
          }
        }
        if (s.size() == n / window) {  // uncapped: every full window, consecutive
          for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i] == i * window);
        }
      }
    }
  }
  CHECK(throws([] { (void)mp::evaluation_starts(10, 0); },
               {"meshpp::evaluation_starts: window is 0"}));
}

TEST_CASE("read_text: a missing file names itself, the Debian packages and the command") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string path = dir / "kjv.txt";
  CHECK(read_throws(path, {},
                    {"meshpp::read_text: ", path + ": no such file.",
                     "install Debian's packages bible-kjv and bible-kjv-text",
                     "apt-get install bible-kjv bible-kjv-text",
                     "bible -f gen1:1-rev22:21 | sed 's/^[^ ]* //' > " + path, "kjv_text"}));
}

TEST_CASE("read_text: directories, unreadable, empty and short files throw") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  CHECK(read_throws(dir.path.string(), {}, {dir.path.string() + ": is a directory, not a text"}));

  const std::string empty = dir / "empty.txt";
  write_file(empty, "");
  CHECK(read_throws(empty, {},
                    {"meshpp::read_text: ", empty + ": is empty (0 bytes)", "bible-kjv-text"}));

  const std::string short_text = dir / "short.txt";
  write_file(short_text, std::string(1023, 'a') + "é");  // 1024 characters, 1025 bytes
  CHECK(mp::read_text(short_text).character_count == 1024);
  write_file(short_text, std::string(1022, 'a') + "é");
  CHECK(read_throws(short_text, {},
                    {short_text + ": too short: 1023 characters (1024 bytes), fewer than "
                                  "min_characters = 1024"}));
  write_file(short_text, "abc");
  CHECK(read_throws(short_text, small(0.25),
                    {short_text + ": too short to split: 3 characters leave 3 for training and "
                                  "0 for validation at validation_fraction = 0.25"}));
  write_file(short_text, "abcd");
  CHECK(mp::read_text(short_text, small(0.25)).validation_ids.size() == 1);

  if (geteuid() != 0) {  // root reads any file
    const std::string locked = dir / "locked.txt";
    write_file(locked, "abcd");
    fs::permissions(locked, fs::perms::none);
    CHECK(read_throws(locked, small(), {locked + ": cannot open: Permission denied"}));
  }
}

TEST_CASE("read_text: bad options throw, naming the option") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string path = dir / "fine.txt";
  write_file(path, "abcdefgh");
  for (const double fraction : {0.0, 1.0, -0.5, 1.5}) {
    CAPTURE(fraction);
    CHECK(read_throws(path, small(fraction),
                      {path, ": bad options: validation_fraction = ", "is not in (0, 1)"}));
  }
  CHECK(read_throws(path, small(1.5), {"validation_fraction = 1.5 is not in (0, 1)"}));
  CHECK(read_throws(path, small(std::numeric_limits<double>::quiet_NaN()),
                    {"validation_fraction = nan is not in (0, 1)"}));
  CHECK(read_throws(path, small(0.25, 0), {path + ": bad options: pad_to = 0"}));
  // options are checked before the file is read
  CHECK(read_throws(dir / "missing.txt", small(0.25, 0), {"bad options: pad_to = 0"}));
}

TEST_CASE("read_text: invalid UTF-8 throws with its byte offset, line and bytes") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string path = dir / "bad.txt";
  struct bad_case {
    std::string text;
    std::string_view parts;
  };
  const std::vector<bad_case> cases{
      {"ab\x80z", "at byte offset 2 (line 1): a continuation byte with no lead byte (bytes 80 7a)"},
      {"ok\nstill ok\n\xC0\xAF", "at byte offset 12 (line 3): an overlong encoding (bytes c0 af)"},
      {"x\xE0\x80\x80", "at byte offset 1 (line 1): an overlong encoding (bytes e0 80 80)"},
      {"x\xF0\x80\x80\x80", "an overlong encoding (bytes f0 80 80 80)"},
      {"x\xED\xA0\x80", "at byte offset 1 (line 1): a UTF-16 surrogate (bytes ed a0 80)"},
      {"x\xF4\x90\x80\x80", "a code point beyond U+10FFFF (bytes f4 90 80 80)"},
      {"\xFFxyz",
       "at byte offset 0 (line 1): a byte that never appears in UTF-8 (bytes ff 78 79 7a)"},
      {"abc\xE2\x9C", "at byte offset 3 (line 1): a sequence cut short by the end of the text"},
      {"abc\xE2x\x93", "a sequence cut short (a missing continuation byte) (bytes e2 78 93)"},
      {"caf\xE9 latin-1", "at byte offset 3 (line 1): a sequence cut short"},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.parts);
    write_file(path, c.text);
    CHECK(read_throws(path, small(),
                      {"meshpp::read_text: ", path + ": invalid UTF-8 ", c.parts,
                       "iconv -f <encoding> -t UTF-8"}));
  }
  // the largest code points of each length are fine
  const mp::text_corpus ok = corpus_of(dir, "\x7F\xDF\xBF\xEF\xBF\xBF\xF4\x8F\xBF\xBF");
  CHECK(ok.alphabet == std::vector<char32_t>{0x7f, 0x7ff, 0xffff, 0x10ffff});
}

TEST_CASE("encode: a character not in the alphabet, or invalid UTF-8, throws naming it") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const mp::text_corpus c = corpus_of(dir, "héllo world\n");
  CHECK(throws([&] { (void)c.encode("hé☺"); },
               {"meshpp::text_corpus::encode: U+263A '☺' (character 2, byte offset 3 of the "
                "input) is not in the alphabet of ",
                c.path, " (9 characters)"}));
  CHECK(throws([&] { (void)c.encode("héllo\tworld"); }, {"U+0009 (character 5, byte offset 6"}));
  CHECK(throws([&] { (void)c.encode("𝄞"); }, {"U+01D11E '𝄞' (character 0"}));
  CHECK(throws([&] { (void)c.encode("h\xC3"); },
               {"meshpp::text_corpus::encode: the input has invalid UTF-8 at byte offset 1 "
                "(line 1): a sequence cut short by the end of the text (bytes c3)"}));
}
