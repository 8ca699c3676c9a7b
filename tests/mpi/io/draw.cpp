// Layout drawings (io/draw.hpp): the SVG is well-formed XML, has one block element per
// distinct block, names every rank in exactly the block it holds, and gives each block the
// global range that the ranks holding it really hold (their local_offsets and local_shape,
// gathered from every rank). Then the run-time drawer from hand-made pictures, its bad input,
// and writing files. Runs at 1, 2 and 4 ranks: the meshes are built from the world's size.
#include <meshpp/core/create.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/io/draw.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/serialization/string.hpp>  // all_gather of strings
#include <boost/serialization/vector.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(a);
MESHPP_DIM(b);
MESHPP_DIM(c);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(unit);

namespace {

// --- a small XML reader: enough of XML 1.0 to reject what a browser would ---------------------
// Elements, attributes (quoted, no duplicates), character data, comments, the five predefined
// entities and character references, one root, an XML declaration at the start. Anything else
// (a stray '<' or '&', an unclosed or mismatched tag, text after the root) throws
// std::runtime_error with the offset.
struct xml_element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<xml_element> children;
  std::string text;  // the character data directly inside, concatenated
};

class xml_reader {
 public:
  explicit xml_reader(std::string_view s) : s_(s) {}

  xml_element document() {
    if (s_.starts_with("<?xml")) {
      const auto end = s_.find("?>");
      if (end == std::string_view::npos) fail("unterminated XML declaration");
      at_ = end + 2;
    }
    skip_misc();
    xml_element root = element();
    skip_misc();
    if (at_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("XML: " + what + " at offset " + std::to_string(at_));
  }
  bool at_end() const { return at_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[at_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\n' || peek() == '\t' || peek() == '\r'))
      ++at_;
  }
  void comment() {  // at "<!--"
    const auto end = s_.find("-->", at_ + 4);
    if (end == std::string_view::npos) fail("unterminated comment");
    at_ = end + 3;
  }
  void skip_misc() {
    for (;;) {
      skip_space();
      if (s_.substr(at_).starts_with("<!--")) {
        comment();
      } else {
        return;
      }
    }
  }
  static bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  }
  static bool name_char(char c) {
    return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
  }
  std::string name() {
    if (!name_start(peek())) fail("expected a name");
    const std::size_t start = at_;
    while (!at_end() && name_char(peek())) ++at_;
    return std::string(s_.substr(start, at_ - start));
  }
  // reference(): at '&'; the character(s) it stands for
  std::string reference() {
    const auto end = s_.find(';', at_);
    if (end == std::string_view::npos || end - at_ > 10) fail("'&' that starts no reference");
    const std::string_view r = s_.substr(at_ + 1, end - at_ - 1);
    at_ = end + 1;
    if (r == "amp") return "&";
    if (r == "lt") return "<";
    if (r == "gt") return ">";
    if (r == "quot") return "\"";
    if (r == "apos") return "'";
    if (r.size() > 1 && r[0] == '#') {
      unsigned long code = 0;
      const bool hex = r[1] == 'x';
      for (char d : r.substr(hex ? 2 : 1)) {
        const bool digit = d >= '0' && d <= '9';
        const bool hex_digit = hex && ((d >= 'a' && d <= 'f') || (d >= 'A' && d <= 'F'));
        if (!digit && !hex_digit) fail("bad character reference");
        code = code * (hex ? 16 : 10) + (digit ? d - '0' : (d | 0x20) - 'a' + 10);
      }
      if (code < 0x80) return std::string(1, static_cast<char>(code));
      return "?";  // a character beyond ASCII: well-formed; its value does not matter here
    }
    fail("unknown entity '&" + std::string(r) + ";'");
  }
  // a character XML 1.0 does not allow (a control character other than tab and line ends)
  void check_char(char c) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      fail("a control character");
    }
  }
  std::string attribute_value() {
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail("an attribute value must be quoted");
    ++at_;
    std::string value;
    while (!at_end() && peek() != quote) {
      if (peek() == '<') fail("'<' in an attribute value");
      if (peek() == '&') {
        value += reference();
      } else {
        check_char(peek());
        value += s_[at_++];
      }
    }
    expect(quote);
    return value;
  }
  xml_element element() {
    expect('<');
    xml_element e;
    e.name = name();
    for (;;) {
      const std::size_t before = at_;
      skip_space();
      if (peek() == '/' || peek() == '>') break;
      if (at_ == before) fail("attributes must be separated by white space");
      std::string key = name();
      skip_space();
      expect('=');
      skip_space();
      if (!e.attributes.emplace(key, attribute_value()).second) {
        fail("attribute '" + key + "' given twice");
      }
    }
    if (peek() == '/') {
      ++at_;
      expect('>');
      return e;
    }
    expect('>');
    for (;;) {
      if (at_end()) fail("element <" + e.name + "> is not closed");
      if (s_.substr(at_).starts_with("</")) {
        at_ += 2;
        if (name() != e.name) fail("a closing tag that does not match <" + e.name + ">");
        skip_space();
        expect('>');
        return e;
      }
      if (s_.substr(at_).starts_with("<!--")) {
        comment();
      } else if (peek() == '<') {
        e.children.push_back(element());
      } else if (peek() == '&') {
        e.text += reference();
      } else {
        if (peek() == '>' && s_.substr(at_ >= 2 ? at_ - 2 : 0, 2) == "]]") fail("']]>' in text");
        check_char(peek());
        e.text += s_[at_++];
      }
    }
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

// parse(svg, root): whether svg is well-formed (reported with MESSAGE if not)
bool parse(const std::string& svg, xml_element& root) {
  try {
    root = xml_reader(svg).document();
    return true;
  } catch (const std::runtime_error& e) {
    MESSAGE("rank " << world().rank() << ": " << e.what());
    return false;
  }
}

// elements_of_class(root, cls): every element whose class is cls, in document order
void collect(const xml_element& e, std::string_view cls, std::vector<const xml_element*>& out) {
  const auto it = e.attributes.find("class");
  if (it != e.attributes.end() && it->second == cls) out.push_back(&e);
  for (const xml_element& child : e.children) collect(child, cls, out);
}
std::vector<const xml_element*> elements_of_class(const xml_element& root, std::string_view cls) {
  std::vector<const xml_element*> out;
  collect(root, cls, out);
  return out;
}

std::string attribute(const xml_element& e, const std::string& key) {
  const auto it = e.attributes.find(key);
  return it == e.attributes.end() ? std::string("<missing>") : it->second;
}

// ranks_of(block): its data-ranks as numbers
std::vector<int> ranks_of(const xml_element& block) {
  std::istringstream in(attribute(block, "data-ranks"));
  return {std::istream_iterator<int>(in), std::istream_iterator<int>()};
}

// range_of(names, offsets, shape) -> "a 0:4, b 6:12", the form of data-range
template <std::size_t N>
std::string range_of(const std::array<std::string_view, N>& names,
                     const std::array<std::size_t, N>& offsets,
                     const std::array<std::size_t, N>& shape) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    out += (i ? ", " : "") + std::string(names[i]) + ' ' + std::to_string(offsets[i]) + ':' +
           std::to_string(offsets[i] + shape[i]);
  }
  return out;
}

// coordinates_text(coords) -> "1,0", the form of one rank in data-coordinates
template <class Coordinates>
std::string coordinates_text(const Coordinates& coords) {
  std::string out;
  for (std::size_t j = 0; j < coords.size(); ++j) {
    out += (j ? "," : "") + std::to_string(coords[j]);
  }
  return out;
}

// check_drawing(t, expected_blocks): the checks every tensor's drawing must pass; returns the
// parsed document for more
template <class Tensor>
xml_element check_drawing(const Tensor& t, std::size_t expected_blocks) {
  const int n = world().size();
  const int me = world().rank();
  const std::string svg = mp::draw(t, "t");
  xml_element root;
  CHECK_ALL_RANKS(parse(svg, root));
  CHECK_ALL_RANKS(root.name == "svg" && attribute(root, "xmlns") == "http://www.w3.org/2000/svg");

  // Every rank draws the same document: no rank's picture depends on where it is drawn.
  const std::size_t hash = std::hash<std::string>{}(svg);
  std::size_t low = 0, high = 0;
  boost::mpi::all_reduce(world(), hash, low, boost::mpi::minimum<std::size_t>());
  boost::mpi::all_reduce(world(), hash, high, boost::mpi::maximum<std::size_t>());
  CHECK(low == high);

  const auto blocks = elements_of_class(root, "block");
  CHECK_ALL_RANKS(blocks.size() == expected_blocks);

  // Every rank of the mesh appears in exactly one block.
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  bool ranks_in_range = true;
  for (const xml_element* block : blocks) {
    for (int r : ranks_of(*block)) {
      if (r < 0 || r >= n) {
        ranks_in_range = false;
      } else {
        ++seen[static_cast<std::size_t>(r)];
      }
    }
  }
  CHECK_ALL_RANKS(ranks_in_range);
  CHECK_ALL_RANKS(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));

  // The block that names this rank has this rank's slice as its range, and this rank's mesh
  // coordinates among its coordinates, in the place of this rank among its ranks.
  constexpr auto names = mp::dim_names_v<typename Tensor::shape_type>;
  const std::string mine = range_of(names, t.local_offsets(), t.local_shape());
  // (checked once after the loop: CHECK_ALL_RANKS is collective, and each rank finds its own
  // block)
  int found = 0;
  bool range_is_mine = false, coordinates_are_mine = false;
  for (const xml_element* block : blocks) {
    const auto ranks = ranks_of(*block);
    const auto at = std::find(ranks.begin(), ranks.end(), me);
    if (at == ranks.end()) continue;
    ++found;
    range_is_mine = attribute(*block, "data-range") == mine;
    std::istringstream in(attribute(*block, "data-coordinates"));
    std::vector<std::string> coordinates{std::istream_iterator<std::string>(in),
                                         std::istream_iterator<std::string>()};
    const auto k = static_cast<std::size_t>(at - ranks.begin());
    coordinates_are_mine = coordinates.size() == ranks.size() &&
                           coordinates[k] == coordinates_text(t.mesh().coordinates());
  }
  CHECK_ALL_RANKS(found == 1);
  CHECK_ALL_RANKS(range_is_mine);
  CHECK_ALL_RANKS(coordinates_are_mine);

  // One block per distinct slice: gather every rank's range; the ranks of a block are exactly
  // those whose slices have the block's range.
  std::vector<std::string> ranges;
  boost::mpi::all_gather(world(), mine, ranges);
  bool blocks_are_the_slices = true;
  for (const xml_element* block : blocks) {
    const std::string range = attribute(*block, "data-range");
    std::vector<int> holders;
    for (int r = 0; r < n; ++r) {
      if (ranges[static_cast<std::size_t>(r)] == range) holders.push_back(r);
    }
    if (holders != ranks_of(*block)) blocks_are_the_slices = false;
  }
  CHECK_ALL_RANKS(blocks_are_the_slices);
  CHECK_ALL_RANKS(std::set<std::string>(ranges.begin(), ranges.end()).size() == blocks.size());
  return root;
}

const auto sizes = mp::extents{a{} = 8, b{} = 12, c{} = 4};

}  // namespace

// The reader is the harness of every check below: it must reject each kind of malformed
// document, and accept the well-formed twin of each.
TEST_CASE("the test's XML reader rejects malformed documents and accepts their twins") {
  auto well_formed = [](std::string_view doc) {
    try {
      xml_reader(doc).document();
      return true;
    } catch (const std::runtime_error&) {
      return false;
    }
  };
  CHECK(well_formed("<?xml version=\"1.0\"?>\n<a x=\"1\" y='2'><b/>t &amp; &#60;<!-- c --></a>\n"));
  CHECK_FALSE(well_formed("<a><b></a></b>"));        // mismatched
  CHECK_FALSE(well_formed("<a><b></b>"));            // unclosed
  CHECK_FALSE(well_formed("<a>t & u</a>"));          // a bare '&'
  CHECK_FALSE(well_formed("<a>t < u</a>"));          // a bare '<'
  CHECK_FALSE(well_formed("<a x=1/>"));              // unquoted
  CHECK_FALSE(well_formed("<a x=\"1\" x=\"2\"/>"));  // twice
  CHECK_FALSE(well_formed("<a x=\"<\"/>"));          // '<' in a value
  CHECK_FALSE(well_formed("<a x=\"1\"y=\"2\"/>"));   // no space between attributes
  CHECK_FALSE(well_formed("<a/><b/>"));              // two roots
  CHECK_FALSE(well_formed("<a>&nbsp;</a>"));         // not one of XML's entities
  CHECK_FALSE(well_formed("<a>\x01</a>"));           // a control character
  xml_element e = xml_reader("<a k=\"&quot;x&amp;y&lt;\">p<b/>q</a>").document();
  CHECK(e.attributes["k"] == "\"x&y<");
  CHECK(e.text == "pq");
  CHECK(e.children.size() == 1);
}

TEST_CASE("a replicated tensor is one block that every rank holds") {
  using mesh_t = mp::mesh<mp::axes<rows>, mp::layout<>>;
  mesh_t m({world().size()});
  const auto t = mp::zeros<float, a, b>(m, sizes);
  const xml_element root = check_drawing(t, 1);
  const auto blocks = elements_of_class(root, "block");
  REQUIRE(blocks.size() == 1);
  CHECK(attribute(*blocks[0], "data-range") == "a 0:8, b 0:12");
  const auto pictures = elements_of_class(root, "picture");
  REQUIRE(pictures.size() == 1);
  CHECK(attribute(*pictures[0], "data-layout") == "");
  CHECK(attribute(*pictures[0], "data-mesh") == "rows:" + std::to_string(world().size()));
}

TEST_CASE("a dim split over one mesh dim of two: stripes, each held by a column of ranks") {
  using rules = mp::layout<mp::split<a, cols>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  const auto grid = meshpp_test::grid2(world().size());  // 1: {1, 1}, 2: {1, 2}, 4: {2, 2}
  mesh_t m(grid);
  const auto t = mp::zeros<float, a>(m, sizes);
  const xml_element root = check_drawing(t, static_cast<std::size_t>(grid[1]));
  if (world().size() == 4) {  // the stripes of a, each held by both rows: ranks c and 2 + c
    const auto blocks = elements_of_class(root, "block");
    REQUIRE(blocks.size() == 2);
    CHECK(attribute(*blocks[0], "data-ranks") == "0 2");
    CHECK(attribute(*blocks[0], "data-range") == "a 0:4");
    CHECK(attribute(*blocks[0], "data-coordinates") == "0,0 1,0");
    CHECK(attribute(*blocks[1], "data-ranks") == "1 3");
    CHECK(attribute(*blocks[1], "data-range") == "a 4:8");
  }
}

TEST_CASE("two dims over a 2-d mesh: one block per rank, in either dim order") {
  using rules = mp::layout<mp::split<a, rows>, mp::split<b, cols>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  mesh_t m(meshpp_test::grid2(world().size()));
  const std::size_t n = static_cast<std::size_t>(world().size());
  const auto ab = mp::zeros<float, a, b>(m, sizes);
  const xml_element root = check_drawing(ab, n);
  const auto ba = mp::zeros<float, b, a>(m, sizes);  // b first: its dim 0 is on mesh dim 1
  check_drawing(ba, n);
  if (world().size() == 4) {  // rank 3 at (1, 1) holds the last stripe of each
    const auto blocks = elements_of_class(root, "block");
    REQUIRE(blocks.size() == 4);
    CHECK(attribute(*blocks[3], "data-ranks") == "3");
    CHECK(attribute(*blocks[3], "data-coordinates") == "1,1");
    CHECK(attribute(*blocks[3], "data-range") == "a 4:8, b 6:12");
    CHECK(attribute(*blocks[1], "data-range") == "a 0:4, b 6:12");  // rank 1 at (0, 1)
    CHECK(attribute(*elements_of_class(root, "picture")[0], "data-layout") == "a:rows;b:cols");
  }
}

TEST_CASE("a rank-3 tensor: the leading dim as panels, one per stripe") {
  using rules = mp::layout<mp::split<a, rows>, mp::split<c, cols>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  const auto grid = meshpp_test::grid2(world().size());
  mesh_t m(grid);
  const auto t = mp::zeros<float, a, b, c>(m, sizes);
  const xml_element root = check_drawing(t, static_cast<std::size_t>(world().size()));
  const auto panels = elements_of_class(root, "panel");
  REQUIRE(panels.size() == static_cast<std::size_t>(grid[0]));
  // each panel: its stripe of a, and the blocks of that stripe only
  bool panels_hold_their_stripe = true;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const std::size_t stripe = 8 / panels.size();
    const std::string range =
        "a " + std::to_string(k * stripe) + ':' + std::to_string((k + 1) * stripe);
    if (attribute(*panels[k], "data-range") != range) panels_hold_their_stripe = false;
    for (const xml_element* block : elements_of_class(*panels[k], "block")) {
      if (!attribute(*block, "data-range").starts_with(range + ", b 0:12, c ")) {
        panels_hold_their_stripe = false;
      }
    }
    if (elements_of_class(*panels[k], "block").size() != static_cast<std::size_t>(grid[1])) {
      panels_hold_their_stripe = false;
    }
  }
  CHECK(panels_hold_their_stripe);
}

TEST_CASE("a mesh dim of size 1 splits nothing: the dim on it is whole in every block") {
  using rules = mp::layout<mp::split<a, rows>, mp::split<b, unit>>;
  using mesh_t = mp::mesh<mp::axes<rows, unit>, rules>;
  mesh_t m({world().size(), 1});
  const auto t = mp::zeros<float, a, b>(m, sizes);
  const xml_element root = check_drawing(t, static_cast<std::size_t>(world().size()));
  bool b_whole = true;
  for (const xml_element* block : elements_of_class(root, "block")) {
    const std::string range = attribute(*block, "data-range");
    b_whole = b_whole && range.ends_with(", b 0:12");
  }
  CHECK(b_whole);
}

TEST_CASE("draw_to_file writes the drawing; a path that cannot be written is an error naming it") {
  using rules = mp::layout<mp::split<a, rows>>;
  using mesh_t = mp::mesh<mp::axes<rows>, rules>;
  mesh_t m({world().size()});
  const auto t = mp::zeros<double, a, c>(m, sizes);
  // a file per rank: ranks writing one file would race (draw_to_file says to call it on one)
  const auto path = std::filesystem::temp_directory_path() /
                    ("meshpp_draw_test_" + std::to_string(world().rank()) + ".svg");
  mp::draw_to_file(path, t, "t");
  std::ifstream in(path, std::ios::binary);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK_ALL_RANKS(written == mp::draw(t, "t"));
  in.close();
  std::filesystem::remove(path);

  const auto bad = std::filesystem::temp_directory_path() / "meshpp_no_such_dir" / "t.svg";
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::draw_to_file(bad, t); }, {"meshpp::write_svg", bad.string(), "cannot open"}));
  CHECK_ALL_RANKS(meshpp_test::ranks_in_step());
}

// --- the run-time drawer, from hand-made pictures ---------------------------------------------

namespace {
// a 6 x 9 tensor over a 2 x 3 mesh: x over rows, y over cols
mp::layout_picture two_by_three() {
  return {"xy", {"x", "y"}, {6, 9}, {0, 1}, {"rows", "cols"}, {2, 3}};
}

// the block of a drawing whose data-ranks is `ranks`, or nullptr
const xml_element* block_of(const xml_element& root, const std::string& ranks) {
  for (const xml_element* block : elements_of_class(root, "block")) {
    if (attribute(*block, "data-ranks") == ranks) return block;
  }
  return nullptr;
}
}  // namespace

TEST_CASE("a size its mesh dim does not divide: near-equal blocks, the last ones shorter") {
  mp::layout_picture p = two_by_three();
  p.sizes = {5, 10};  // x 3 + 2 over rows, y 4 + 3 + 3 over cols
  const auto blocks = mp::layout_blocks(p);
  REQUIRE(blocks.size() == 6);
  const std::vector<std::size_t> x_at{0, 3, 5}, y_at{0, 4, 7, 10};
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      const auto& b = blocks[i * 3 + j];
      CHECK(b.begin == std::vector<std::size_t>{x_at[i], y_at[j]});
      CHECK(b.end == std::vector<std::size_t>{x_at[i + 1], y_at[j + 1]});
    }
  }
}

TEST_CASE("layout_blocks numbers ranks row-major and gives each its stripe") {
  const auto blocks = mp::layout_blocks(two_by_three());
  REQUIRE(blocks.size() == 6);
  // block (1, 2): rank 1 * 3 + 2 = 5, at (1, 2), holding x 3:6, y 6:9
  CHECK(blocks[5].ranks == std::vector<int>{5});
  CHECK(blocks[5].coordinates == std::vector<std::vector<int>>{{1, 2}});
  CHECK(blocks[5].begin == std::vector<std::size_t>{3, 6});
  CHECK(blocks[5].end == std::vector<std::size_t>{6, 9});
  CHECK(blocks[5].stripe == std::vector<std::size_t>{1, 2});
  CHECK(mp::range_text(two_by_three(), blocks[5]) == "x 3:6, y 6:9");

  // the same dims on the other mesh dims: x over cols (3), y over rows (2); rank 1 at (0, 1)
  // holds x's stripe 1 and y's stripe 0
  auto swapped = two_by_three();
  swapped.mesh_dim_of_dim = {1, 0};
  swapped.sizes = {6, 8};
  const auto transposed = mp::layout_blocks(swapped);
  REQUIRE(transposed.size() == 6);
  const auto rank1 =
      std::find_if(transposed.begin(), transposed.end(),
                   [](const mp::layout_block& k) { return k.ranks == std::vector<int>{1}; });
  REQUIRE(rank1 != transposed.end());
  CHECK(mp::range_text(swapped, *rank1) == "x 2:4, y 0:4");

  // partly replicated: only y split (over cols): each block held by both rows
  auto partial = two_by_three();
  partial.mesh_dim_of_dim = {-1, 1};
  const auto columns = mp::layout_blocks(partial);
  REQUIRE(columns.size() == 3);
  CHECK(columns[1].ranks == std::vector<int>{1, 4});
  CHECK(columns[1].coordinates == std::vector<std::vector<int>>{{0, 1}, {1, 1}});
  CHECK(mp::range_text(partial, columns[1]) == "x 0:6, y 3:6");
}

TEST_CASE("draw_svg of hand-made pictures: blocks, panels, scalars, escaping, several pictures") {
  xml_element root;
  REQUIRE(parse(mp::draw_svg(two_by_three()), root));
  CHECK(elements_of_class(root, "block").size() == 6);
  const xml_element* five = block_of(root, "5");
  REQUIRE(five != nullptr);
  CHECK(attribute(*five, "data-range") == "x 3:6, y 6:9");
  CHECK(attribute(*five, "data-coordinates") == "1,2");

  // rank 4, the two leading dims split: 2 x 2 panels, one block each, the grid whole
  const mp::layout_picture four{"four",         {"p", "q", "r", "s"}, {2, 4, 3, 5},
                                {0, 1, -1, -1}, {"m0", "m1"},         {2, 2}};
  REQUIRE(parse(mp::draw_svg(four), root));
  const auto panels = elements_of_class(root, "panel");
  REQUIRE(panels.size() == 4);
  CHECK(attribute(*panels[2], "data-range") == "p 1:2, q 0:2");
  const auto in_panel = elements_of_class(*panels[2], "block");
  REQUIRE(in_panel.size() == 1);
  CHECK(attribute(*in_panel[0], "data-ranks") == "2");
  CHECK(attribute(*in_panel[0], "data-range") == "p 1:2, q 0:2, r 0:3, s 0:5");

  // a tensor of no dims on a mesh of no dims: one block, rank 0, an empty range
  const mp::layout_picture scalar{"scalar", {}, {}, {}, {}, {}};
  REQUIRE(parse(mp::draw_svg(scalar), root));
  const auto one = elements_of_class(root, "block");
  REQUIRE(one.size() == 1);
  CHECK(attribute(*one[0], "data-ranks") == "0");
  CHECK(attribute(*one[0], "data-range") == "");

  // names and titles with XML's special characters, and a control character, stay well-formed
  mp::layout_picture odd = two_by_three();
  odd.title = "x < y & \"q\" 'r' > \x01";
  odd.dim_names = {"x<1>", "y&z"};
  REQUIRE(parse(mp::draw_svg(odd), root));
  const auto picture = elements_of_class(root, "picture");
  REQUIRE(picture.size() == 1);
  CHECK(attribute(*picture[0], "data-title") == "x < y & \"q\" 'r' > ?");
  CHECK(attribute(*picture[0], "data-dims") == "x<1> y&z");
  CHECK(attribute(*block_of(root, "5"), "data-range") == "x<1> 3:6, y&z 6:9");

  // three pictures, two a row: three picture groups, every block of each
  REQUIRE(parse(mp::draw_svg({two_by_three(), four, scalar}, 2), root));
  CHECK(elements_of_class(root, "picture").size() == 3);
  CHECK(elements_of_class(root, "block").size() == 6 + 4 + 1);
  CHECK_THROWS_AS(mp::draw_svg({scalar}, 0), mp::error);
}

TEST_CASE("a picture of no legal layout is an error naming the picture and the problem") {
  using meshpp_test::throws_with;
  // the twin that must pass: every bad picture below is this one with one thing changed
  CHECK_NOTHROW(mp::check_layout_picture(two_by_three()));
  const std::string_view who = "meshpp::layout_picture 'xy': ";
  auto bad = [&](auto change, std::string_view message) {
    mp::layout_picture p = two_by_three();
    change(p);
    return throws_with<mp::error>([&] { mp::draw_svg(p); }, {who, message});
  };
  CHECK(
      bad([](auto& p) { p.sizes = {6}; }, "2 dim_names but 1 sizes (one of each per tensor dim)"));
  CHECK(bad(
      [](auto& p) {
        p.mesh_dim_of_dim = {0, 1, -1};
      },
      "2 dim_names but 3 mesh_dim_of_dim entries"));
  CHECK(bad([](auto& p) { p.mesh_sizes = {2}; }, "2 mesh_dim_names but 1 mesh_sizes"));
  CHECK(bad(
      [](auto& p) {
        p.mesh_sizes = {2, 0};
      },
      "mesh dim 'cols' has size 0; mesh sizes must be at least 1"));
  CHECK(bad(
      [](auto& p) {
        p.mesh_dim_of_dim = {0, 2};
      },
      "dim 'y' is split over mesh dim 2, but the mesh has 2 dims"));
  CHECK(bad([](auto& p) { p.mesh_dim_of_dim = {-2, 1}; }, "dim 'x' is split over mesh dim -2"));
  CHECK(bad(
      [](auto& p) {
        p.mesh_dim_of_dim = {1, 1};
      },
      "dims 'x' and 'y' are both split over mesh dim 'cols' (illegal layout"));
  CHECK(bad([](auto& p) { p.dim_names = {"x", "x"}; }, "dim 'x' appears twice"));
  CHECK(bad([](auto& p) { p.mesh_dim_names = {"rows", "rows"}; }, "mesh dim 'rows' appears twice"));
  CHECK(bad([](auto& p) { p.dim_names = {"x", ""}; }, "dim 1 has no name"));
  CHECK(bad([](auto& p) { p.mesh_sizes = {65536, 65536}; }, "ranks (an MPI rank is an int)"));
  // layout_blocks checks too
  mp::layout_picture p = two_by_three();
  p.sizes = {6};
  CHECK(throws_with<mp::error>([&] { mp::layout_blocks(p); }, {who, "1 sizes"}));
}
