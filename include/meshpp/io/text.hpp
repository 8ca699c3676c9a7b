// meshpp/io/text.hpp — a UTF-8 text file as character ids, for character-level language models.
//
//   const text_corpus text = load_text(comm, "build/data/kjv.txt");  // every rank, identical
//   text.vocab_size();                       // alphabet size rounded up to a multiple of 8
//   auto starts = window_starts(text.train_ids.size(), length + 1, batch, seed, step);
//   for (std::size_t s : starts) { /* ids [s, s + length) in, [s + 1, s + length + 1) out */ }
//   auto eval = evaluation_starts(text.validation_ids.size(), length + 1, 64);
//   std::string sample = text.decode(ids);  std::vector<std::int32_t> prompt = text.encode("In");
//
// A character is a Unicode code point. The alphabet is the sorted distinct code points of the
// whole file (validation part included, so any part of the file encodes); a character's id
// is its index there. vocab_size() pads the alphabet to a multiple of text_options::pad_to
// (8: the vocab dim then splits over 1, 2, 4 or 8 ranks); encode never produces the padding
// ids, and decode turns them into U+FFFD (the replacement character), since a model with
// vocab_size() outputs can sample them. A validation_fraction of the characters is the
// validation part, held out, never drawn for training: by default the last characters, in one
// piece; with text_options::validation_block = B, blocks of B characters spread over the whole
// text (block j is held out when floor((j + 1) f) > floor(j f), f the fraction: every 20th at
// 5%), so the held-out text is drawn from every part of it, not only its end. Each part is its
// blocks joined in order.
//
// The default text is the King James Bible of Debian's packages bible-kjv (the program
// `bible`) and bible-kjv-text (the text), without verse references, one verse a line:
//   bible -f gen1:1-rev22:21 | sed 's/^[^ ]* //' > kjv.txt     (the build's target kjv_text)
// 4137850 characters, 63 distinct: vocab_size() 64.
//
// Errors: load_text throws meshpp::error naming the file and the problem, with the same
// message on every rank (fail together, never hang), for a missing file (naming the Debian
// packages and the command above), an unreadable one or a directory, an empty or too short
// one, invalid UTF-8 (the byte offset and line), bad options (validation_fraction not in
// (0, 1), pad_to 0), and ranks that read different text. encode throws for a character not
// in the alphabet (naming it) or invalid UTF-8; decode for an id outside [0, vocab_size()).
//
// Sampling is a pure function of its arguments, so every rank draws the same windows with no
// communication: window_starts(n, window, count, seed, step) is `count` draws of splitmix64
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
// from the state mix(mix(seed) ^ step), mix being splitmix64's output function, each made
// uniform in [0, n - window] by rejection: the same draws on every platform and rank count.
#pragma once

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/agree.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/random.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

/// @brief How load_text splits and pads a text, and how short a text it refuses.
// text_options{validation_fraction, pad_to, min_characters, validation_block}
struct text_options {
  double validation_fraction = 0.05;  // 5% of the characters, held out
  std::size_t pad_to = 8;             // vocab_size() is a multiple of this
  // Fewer characters than this is an error: such a file is surely not the intended corpus
  // (a failed download or redirect); lower it for tiny texts.
  std::size_t min_characters = 1024;
  // 0: the validation part is the last characters, in one piece; B > 0: blocks of B
  // characters spread evenly over the text (every 20th block at 5%, so the text needs at
  // least 20 blocks)
  std::size_t validation_block = 0;
};

/// @brief A text as character ids: its alphabet (sorted distinct code points), the ids of
/// its training part and of its validation part (held out), and the mapping
/// between UTF-8 and ids.
// text_corpus{path, alphabet, pad_to, train_ids, validation_ids, character_count}
struct text_corpus {
  std::string path;                          // the file it was read from
  std::vector<char32_t> alphabet;            // id -> code point, sorted, distinct
  std::size_t pad_to = 8;                    // vocab_size() is a multiple of this
  std::vector<std::int32_t> train_ids;       // the characters not held out, in order
  std::vector<std::int32_t> validation_ids;  // the held-out validation_fraction of them
  std::size_t character_count = 0;           // train_ids.size() + validation_ids.size()

  // vocab_size(): alphabet.size() rounded up to a multiple of pad_to; ids at or above
  // alphabet.size() are padding, never produced by encode
  std::size_t vocab_size() const;

  // encode(utf8) -> ids: throws meshpp::error for invalid UTF-8 or a character not in the
  // alphabet, naming it and where it is
  std::vector<std::int32_t> encode(std::string_view utf8) const;

  // decode(ids) -> UTF-8: a padding id decodes to U+FFFD; an id outside [0, vocab_size())
  // throws meshpp::error
  std::string decode(std::span<const std::int32_t> ids) const;

  bool operator==(const text_corpus&) const = default;
};

// read_text(path, options) -> text_corpus: this process alone reads the file. Throws
// meshpp::error naming the file and the problem.
inline text_corpus read_text(const std::string& path, const text_options& options = {});

// load_text(comm, path, options) -> text_corpus: collective; every rank reads the file (file
// systems may be per node) and gets the same corpus, or every rank throws meshpp::error with
// the same message: the first failing rank's, or "ranks read different text" when they
// succeed with different results.
inline text_corpus load_text(const boost::mpi::communicator& comm, const std::string& path,
                             const text_options& options = {});

// window_starts(n_ids, window, count, seed, step) -> count offsets in [0, n_ids - window],
// uniform and independent, the same on every rank and platform for the same arguments.
// Throws meshpp::error unless 0 < window <= n_ids.
inline std::vector<std::size_t> window_starts(std::size_t n_ids, std::size_t window,
                                              std::size_t count, std::uint64_t seed,
                                              std::uint64_t step);

// evaluation_starts(n_ids, window, max_windows) -> the starts of non-overlapping windows of
// `window` ids: all n_ids / window consecutive ones (0, window, 2 window, ...) when they are
// at most max_windows, else max_windows of them spread evenly over the text. Empty when the
// text is shorter than one window. Throws meshpp::error if window is 0. (With windows of
// length + 1 ids, inputs and their next-id targets, the first id of each window is never a
// target: validation bits per character then average over the other ids.)
inline std::vector<std::size_t> evaluation_starts(
    std::size_t n_ids, std::size_t window,
    std::size_t max_windows = std::numeric_limits<std::size_t>::max());

// --- implementation ------------------------------------------------------------------------

namespace detail {

// What to do when the text is missing, said wherever it is missing.
inline std::string kjv_text_hint(const std::string& path) {
  std::string hint;
  append(hint,
         "The default text is the King James Bible: install Debian's packages bible-kjv and "
         "bible-kjv-text (apt-get install bible-kjv bible-kjv-text), then make the file with "
         "`bible -f gen1:1-rev22:21 | sed 's/^[^ ]* //' > ",
         path, "` (meshpp's build target kjv_text does this); or give any UTF-8 text file instead");
  return hint;
}

inline std::string number_text(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

// "U+00E9 'é'": the code point, and the character itself when it prints (not a control)
inline std::string character_text(char32_t c);

// decode_utf8(text, at, out) -> nullptr, having read one code point into out and advanced
// at past it; or, at a malformed sequence, what is wrong with it (at unchanged). Strict
// RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
inline const char* decode_utf8(std::string_view text, std::size_t& at, char32_t& out) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) {
    out = lead;
    ++at;
    return nullptr;
  }
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
  if (lead < 0xc0) return "a continuation byte with no lead byte";
  if (lead < 0xc2) return "an overlong encoding";
  if (lead < 0xe0) {
    length = 2;
  } else if (lead < 0xf0) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // below: overlong
    if (lead == 0xed) high = 0x9f;  // above: UTF-16 surrogates
  } else if (lead < 0xf5) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // below: overlong
    if (lead == 0xf4) high = 0x8f;  // above: beyond U+10FFFF
  } else {
    return "a byte that never appears in UTF-8";
  }
  if (at + 1 < text.size() && (byte(at + 1) < low || byte(at + 1) > high) && byte(at + 1) >= 0x80 &&
      byte(at + 1) <= 0xbf) {
    if (lead == 0xed) return "a UTF-16 surrogate";
    if (lead == 0xf4) return "a code point beyond U+10FFFF";
    return "an overlong encoding";
  }
  char32_t c = lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if (at + i >= text.size()) return "a sequence cut short by the end of the text";
    const unsigned char b = byte(at + i);
    if (b < 0x80 || b > 0xbf) return "a sequence cut short (a missing continuation byte)";
    c = (c << 6) | (b & 0x3f);
  }
  out = c;
  at += length;
  return nullptr;
}

inline void encode_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

inline std::string character_text(char32_t c) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out = "U+";
  const int width = c > 0xffff ? 6 : 4;
  for (int shift = 4 * (width - 1); shift >= 0; shift -= 4) out += digits[(c >> shift) & 0xf];
  const bool control = c < 0x20 || (c >= 0x7f && c < 0xa0);
  if (!control) {
    out += " '";
    encode_utf8(out, c);
    out += '\'';
  }
  return out;
}

// "invalid UTF-8 at byte offset 12 (line 2): <what> (bytes c3 28)"
inline std::string utf8_problem(std::string_view text, std::size_t at, const char* what) {
  static constexpr char digits[] = "0123456789abcdef";
  const std::size_t line =
      1 + static_cast<std::size_t>(
              std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  std::string bytes;
  for (std::size_t i = at; i < std::min(text.size(), at + 4); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (i > at) bytes += ' ';
    bytes += digits[b >> 4];
    bytes += digits[b & 0xf];
  }
  std::string out;
  append(out, "invalid UTF-8 at byte offset ", at, " (line ", line, "): ", what, " (bytes ", bytes,
         ")");
  return out;
}

// The id of c in the sorted alphabet, or -1.
inline std::int32_t id_of(const std::vector<char32_t>& alphabet, char32_t c) {
  const auto it = std::lower_bound(alphabet.begin(), alphabet.end(), c);
  if (it == alphabet.end() || *it != c) return -1;
  return static_cast<std::int32_t>(it - alphabet.begin());
}

template <class... P>
[[noreturn]] void text_fail(const char* who, const std::string& path, const P&... pieces) {
  std::string message;
  append(message, "meshpp::", who, ": ", path, ": ", pieces...);
  throw error(message);
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// The bytes of the file; throws naming it.
inline std::string read_bytes(const char* who, const std::string& path) {
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    const int code = errno;
    if (code == ENOENT) text_fail(who, path, "no such file. ", kjv_text_hint(path));
    text_fail(who, path, "cannot open: ", std::strerror(code));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) text_fail(who, path, "is a directory, not a text");
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(buffer, 1, sizeof buffer, file.get());
    bytes.append(buffer, got);
    if (got < sizeof buffer) break;
  }
  if (std::ferror(file.get())) text_fail(who, path, "read error: ", std::strerror(errno));
  return bytes;
}

inline text_corpus read_text(const char* who, const std::string& path,
                             const text_options& options) {
  const double fraction = options.validation_fraction;
  if (!(fraction > 0 && fraction < 1)) {
    text_fail(who, path, "bad options: validation_fraction = ", number_text(fraction),
              " is not in (0, 1)");
  }
  if (options.pad_to == 0) text_fail(who, path, "bad options: pad_to = 0, must be at least 1");

  const std::string bytes = read_bytes(who, path);
  if (bytes.empty()) {
    text_fail(who, path, "is empty (0 bytes). ", kjv_text_hint(path));
  }

  // One pass to check the UTF-8, count the characters and find the alphabet...
  std::vector<bool> seen(0x110000, false);
  std::size_t n = 0;
  for (std::size_t at = 0; at < bytes.size(); ++n) {
    char32_t c = 0;
    if (const char* what = decode_utf8(bytes, at, c)) {
      text_fail(who, path, utf8_problem(bytes, at, what),
                ". Is it in another encoding? iconv -f <encoding> -t UTF-8 converts it");
    }
    seen[c] = true;
  }
  // the held-out characters: [begin, end) ranges, in order
  std::vector<std::pair<std::size_t, std::size_t>> held;
  std::size_t validation = 0;
  if (options.validation_block == 0) {
    validation = static_cast<std::size_t>(std::floor(static_cast<double>(n) * fraction));
    held.emplace_back(n - validation, n);
  } else {
    const std::size_t b = options.validation_block;
    for (std::size_t j = 0; j * b < n; ++j) {
      const double before = std::floor(static_cast<double>(j) * fraction);
      const double after = std::floor(static_cast<double>(j + 1) * fraction);
      if (after > before) {
        held.emplace_back(j * b, std::min(n, (j + 1) * b));
        validation += held.back().second - held.back().first;
      }
    }
  }
  if (n < options.min_characters) {
    text_fail(who, path, "too short: ", n, " characters (", bytes.size(),
              " bytes), fewer than min_characters = ", options.min_characters);
  }
  if (validation == 0 || validation == n) {
    text_fail(who, path, "too short to split: ", n, " characters leave ", n - validation,
              " for training and ", validation,
              " for validation at validation_fraction = ", number_text(fraction),
              options.validation_block
                  ? " and validation_block = " + std::to_string(options.validation_block) +
                        " (a block is held out only every 1/validation_fraction blocks: use "
                        "smaller blocks, or validation_block = 0 to hold out the end)"
                  : std::string());
  }

  text_corpus out;
  out.path = path;
  out.pad_to = options.pad_to;
  out.character_count = n;
  for (char32_t c = 0; c < seen.size(); ++c) {
    if (seen[c]) out.alphabet.push_back(c);
  }
  // ...and one to encode it.
  std::vector<std::int32_t> ids;
  ids.reserve(n);
  for (std::size_t at = 0; at < bytes.size();) {
    char32_t c = 0;
    decode_utf8(bytes, at, c);
    ids.push_back(id_of(out.alphabet, c));
  }
  out.train_ids.reserve(n - validation);
  out.validation_ids.reserve(validation);
  std::size_t from = 0;
  const auto at = [&](std::size_t i) { return ids.begin() + static_cast<std::ptrdiff_t>(i); };
  for (const auto& [begin, end] : held) {
    out.train_ids.insert(out.train_ids.end(), at(from), at(begin));
    out.validation_ids.insert(out.validation_ids.end(), at(begin), at(end));
    from = end;
  }
  out.train_ids.insert(out.train_ids.end(), at(from), at(n));
  return out;
}

// The stream for (seed, step): distinct steps of one seed start at pseudo-random states
// (not neighbouring ones, whose streams would be shifted copies of each other).
constexpr splitmix64 splitmix64_stream(std::uint64_t seed, std::uint64_t step) {
  return splitmix64{splitmix64_mix(splitmix64_mix(seed) ^ step)};
}

// uniform_below(stream, range) -> uniform in [0, range), range > 0: rejects the
// 2^64 mod range lowest draws, so the rest split evenly into range classes.
constexpr std::uint64_t uniform_below(splitmix64& stream, std::uint64_t range) {
  const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod range
  for (;;) {
    const std::uint64_t z = stream.next();
    if (z >= threshold) return z % range;
  }
}

// A 64-bit digest of a corpus's contents: equal corpora give equal digests on every rank.
inline std::uint64_t digest(const text_corpus& c) {
  std::uint64_t h = splitmix64_mix(c.pad_to ^ 0x74657874u);
  const auto add = [&](std::uint64_t v) { h = splitmix64_mix(h ^ (v + 0x9e3779b97f4a7c15u)); };
  add(c.alphabet.size());
  for (const char32_t a : c.alphabet) add(a);
  for (const auto* ids : {&c.train_ids, &c.validation_ids}) {
    add(ids->size());
    for (const std::int32_t id : *ids) add(static_cast<std::uint32_t>(id));
  }
  return h;
}

// agree_on_message(comm, problem): collective; throws meshpp::error on every rank of comm if
// any rank passes a non-empty problem, every rank with the text of the lowest such rank.
inline void agree_on_message(const boost::mpi::communicator& comm, const std::string& problem) {
  const auto [first, message] = lowest_problem(comm, problem, "load_text's agreement");
  if (first != INT_MAX) throw error(message);
}

}  // namespace detail

inline std::size_t text_corpus::vocab_size() const {
  const std::size_t step = pad_to == 0 ? 1 : pad_to;
  return (alphabet.size() + step - 1) / step * step;
}

inline std::vector<std::int32_t> text_corpus::encode(std::string_view utf8) const {
  std::vector<std::int32_t> out;
  out.reserve(utf8.size());
  for (std::size_t at = 0; at < utf8.size();) {
    const std::size_t start = at;
    char32_t c = 0;
    if (const char* what = detail::decode_utf8(utf8, at, c)) {
      std::string message;
      detail::append(message, "meshpp::text_corpus::encode: the input has ",
                     detail::utf8_problem(utf8, at, what));
      throw error(message);
    }
    const std::int32_t id = detail::id_of(alphabet, c);
    if (id < 0) {
      std::string message;
      detail::append(message, "meshpp::text_corpus::encode: ", detail::character_text(c),
                     " (character ", out.size(), ", byte offset ", start,
                     " of the input) is not in the alphabet of ", path, " (", alphabet.size(),
                     " characters)");
      throw error(message);
    }
    out.push_back(id);
  }
  return out;
}

inline std::string text_corpus::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (const std::int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_size()) {
      std::string message;
      detail::append(message, "meshpp::text_corpus::decode: id ", id, " is not in [0, ",
                     vocab_size(), "), the vocabulary of ", path);
      throw error(message);
    }
    const auto index = static_cast<std::size_t>(id);
    detail::encode_utf8(out, index < alphabet.size() ? alphabet[index] : char32_t{0xfffd});
  }
  return out;
}

inline text_corpus read_text(const std::string& path, const text_options& options) {
  return detail::read_text("read_text", path, options);
}

inline text_corpus load_text(const boost::mpi::communicator& comm, const std::string& path,
                             const text_options& options) {
  text_corpus out;
  std::string problem;
  try {
    out = detail::read_text("load_text", path, options);
  } catch (const std::exception& e) {  // std::bad_alloc too: no rank may leave alone
    problem = e.what();
    if (problem.empty()) detail::append(problem, "meshpp::load_text: ", path, ": failed");
  }
  detail::agree_on_message(comm, problem);

  // Same digest on every rank iff max(h) and max(~h) (= ~min(h)) are both this rank's.
  const std::uint64_t h = detail::digest(out);
  const unsigned long long mine[2] = {h, ~h};
  unsigned long long most[2] = {h, ~h};
  detail::allreduce_values(MPI_Comm(comm), most, 2, MPI_MAX, "load_text's digest");
  if (most[0] != mine[0] || most[1] != mine[1]) {
    std::string message;
    detail::append(message, "meshpp::load_text: ", path,
                   ": ranks read different text, or were given different options (a per-node "
                   "file system with different files?)");
    detail::agree_on_message(comm, message);  // every rank is here: one message, rank 0's path
  }
  return out;
}

inline std::vector<std::size_t> window_starts(std::size_t n_ids, std::size_t window,
                                              std::size_t count, std::uint64_t seed,
                                              std::uint64_t step) {
  if (window == 0 || window > n_ids) {
    std::string message;
    detail::append(message, "meshpp::window_starts: a window of ", window,
                   " ids does not fit in a text of ", n_ids, " ids (need 0 < window <= n_ids)");
    throw error(message);
  }
  auto stream = detail::splitmix64_stream(seed, step);
  const std::uint64_t range = std::uint64_t{n_ids - window} + 1;
  std::vector<std::size_t> out(count);
  for (std::size_t& start : out)
    start = static_cast<std::size_t>(detail::uniform_below(stream, range));
  return out;
}

inline std::vector<std::size_t> evaluation_starts(std::size_t n_ids, std::size_t window,
                                                  std::size_t max_windows) {
  if (window == 0) throw error("meshpp::evaluation_starts: window is 0, must be at least 1");
  const std::size_t total = n_ids / window;
  const std::size_t m = std::min(total, max_windows);
  if (m == 0) return {};
  std::vector<std::size_t> out(m);
  // window k of m is tiling window floor(k * total / m): in order, distinct, spread evenly
  // (k * total split as k * q + k * r / m, so it overflows only beyond 2^32 windows)
  const std::size_t q = total / m, r = total % m;
  for (std::size_t k = 0; k < m; ++k) out[k] = (k * q + k * r / m) * window;
  return out;
}

}  // namespace meshpp
