// meshpp/io/draw.hpp — layout drawings: an SVG of which rank holds which block of a tensor, as
// in the Mesh-TensorFlow paper's figures.
//
//   std::string svg = mp::draw(x);                          // from the type and global sizes
//   if (mesh.rank() == 0) mp::draw_to_file("x.svg", x);     // the same, written to a file
//   mp::layout_picture p = mp::layout_picture_of(x, "x");   // the run-time description
//   std::string both = mp::draw_svg({mp::layout_picture_of(x), mp::layout_picture_of(w)});
//
// Two levels. A layout_picture describes a layout with run-time values only (dim names and
// sizes, which mesh dim each dim is split over, the mesh's names and sizes), so that code
// without the tensor type (a plan drawing each operation's layouts) can draw too; draw_svg
// draws one or several. layout_picture_of(t) makes one from a tensor, and draw(t) draws it.
//
// The blocks are computed for every rank of the mesh, not gathered: rank r sits at the
// row-major coordinates of r over the mesh sizes (detail::coordinates_at, the mesh's own
// numbering), and holds along each split dim the stripe detail::stripe_begin gives its
// coordinate, whole along the others (the tensor's own rule). So a drawing needs no
// communication, every rank can make it, and it cannot disagree with the data (the tests
// compare every block with the slices the ranks hold).
//
// The picture: the tensor's global index space as a grid, each block a rectangle labelled
// with the ranks that hold it and their mesh coordinates, one colour a block, and the stripe
// ranges along the edges. A tensor of rank 2 is rows x columns (its first dim down, its second
// across); rank 1 one row; rank 0 one cell. Rank 3 and more: the last two dims are the grid,
// and the leading dims are faceted, one panel per combination of their stripes (row-major,
// labelled with the leading ranges), so every block still appears exactly once. A replicated
// tensor is one block that every rank holds; a dim split over a mesh dim shows stripes. A
// legend gives the layout (Mesh-TensorFlow's spelling, batch:rows;hidden:cols) and the mesh.
//
// For tests and tools, each block is an SVG group with its data as attributes:
//   <g class="block" data-ranks="0 2" data-coordinates="0,0 1,0"
//      data-range="batch 0:50, hidden 0:64"> <title>...</title> <rect .../> <text>... </g>
// inside a <g class="picture"> per picture (data-title, data-dims, data-sizes, data-layout,
// data-mesh) and a <g class="panel" data-range="..."> per panel (the leading dims' ranges,
// empty below rank 3).
//
// Errors: a picture that describes no legal layout (vectors of different lengths, a mesh dim
// out of range or of size < 1, two dims split over one mesh dim, repeated names) throws
// meshpp::error naming the picture and the problem; draw_to_file and write_svg throw
// meshpp::error naming the path when it cannot be written. A size its mesh dim does not
// divide is no error: it is drawn in its near-equal blocks (core/divides.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

/// @brief A tensor's layout over a mesh, as run-time data: everything a drawing needs.
// layout_picture{title, dim_names, sizes, mesh_dim_of_dim, mesh_dim_names, mesh_sizes}
struct layout_picture {
  std::string title;                        // the picture's heading
  std::vector<std::string> dim_names;       // the tensor's dims, in storage order
  std::vector<std::size_t> sizes;           // the global size of each dim
  std::vector<int> mesh_dim_of_dim;         // each dim's mesh dim (an index into mesh_dim_names),
                                            // or -1: whole on every rank
  std::vector<std::string> mesh_dim_names;  // the mesh's dims, in the mesh's order
  std::vector<int> mesh_sizes;              // the number of ranks along each
};

/// @brief One block of a layout: a box of the global index space and the ranks that hold it.
struct layout_block {
  std::vector<std::size_t> begin;  // the box is [begin[i], end[i]) along dim i
  std::vector<std::size_t> end;
  std::vector<std::size_t> stripe;            // which stripe along each dim (0 for a whole dim)
  std::vector<int> ranks;                     // ascending
  std::vector<std::vector<int>> coordinates;  // each rank's mesh coordinates
};

// check_layout_picture(p): throws meshpp::error unless p describes a legal layout
inline void check_layout_picture(const layout_picture& p);

// layout_blocks(p): p's distinct blocks in row-major order of their stripes, each with every
// rank that holds it (checks p first)
inline std::vector<layout_block> layout_blocks(const layout_picture& p);

// range_text(p, block) -> "batch 0:50, hidden 0:64" (the block's data-range)
inline std::string range_text(const layout_picture& p, const layout_block& block);

// draw_svg(p): an SVG document of one layout
inline std::string draw_svg(const layout_picture& p);
// draw_svg(pictures, columns = 1): one SVG document of several layouts, `columns` side by side
// a row, rows one under the other (throws meshpp::error for 0 columns)
inline std::string draw_svg(const std::vector<layout_picture>& pictures, std::size_t columns = 1);

// write_svg(path, svg): writes an SVG document to a file; throws meshpp::error naming the path
inline void write_svg(const std::filesystem::path& path, std::string_view svg);

// layout_picture_of(t, title = ""): the layout of tensor t (an empty title: its dims and sizes)
template <class T, class S, class L, class M>
layout_picture layout_picture_of(const tensor<T, S, L, M>& t, std::string title = {});

// draw(t, title = ""): the SVG drawing of t's layout. No communication: any rank may call it,
// and every rank draws the same picture.
template <class T, class S, class L, class M>
std::string draw(const tensor<T, S, L, M>& t, std::string title = {}) {
  return draw_svg(layout_picture_of(t, std::move(title)));
}

// draw_to_file(path, t, title = ""): draw(t, title) written to path. Call it on one rank (say
// `if (mesh.rank() == 0)`): the drawing needs no other rank, and several ranks writing one
// file would race.
template <class T, class S, class L, class M>
void draw_to_file(const std::filesystem::path& path, const tensor<T, S, L, M>& t,
                  std::string title = {}) {
  write_svg(path, draw(t, std::move(title)));
}

namespace detail {

// mesh_axis_or_whole<Mesh, MeshDim>(): the position of MeshDim in Mesh's axes, or -1 for
// no_mesh_dim (a dim the layout leaves whole)
template <class Mesh, class MeshDim>
constexpr int mesh_axis_or_whole() {
  if constexpr (std::is_same_v<MeshDim, no_mesh_dim>) {
    return -1;
  } else {
    return static_cast<int>(Mesh::template axis_v<MeshDim>);
  }
}

template <class Mesh, class Layout, class... Dims>
std::vector<int> mesh_dims_of(shape<Dims...>*) {
  return {mesh_axis_or_whole<Mesh, mesh_dim_of_t<Layout, Dims>>()...};
}

// picture_problem(p, what...): the error for picture p
template <class... P>
error picture_problem(const layout_picture& p, const P&... what) {
  std::string message = "meshpp::layout_picture '" + p.title + "': ";
  append(message, what...);
  return error(message);
}

}  // namespace detail

template <class T, class S, class L, class M>
layout_picture layout_picture_of(const tensor<T, S, L, M>& t, std::string title) {
  layout_picture p;
  constexpr auto names = dim_names_v<S>;
  for (std::size_t i = 0; i < S::rank; ++i) {
    p.dim_names.emplace_back(names[i]);
    p.sizes.push_back(t.global_shape()[i]);
  }
  if (title.empty()) {
    title = "tensor<" + detail::value_type_name<T>() + "> [";
    for (std::size_t i = 0; i < S::rank; ++i) {
      detail::append(title, i ? ", " : "", names[i], ':', p.sizes[i]);
    }
    title += "]";
  }
  p.title = std::move(title);
  p.mesh_dim_of_dim = detail::mesh_dims_of<M, L>(static_cast<S*>(nullptr));
  for (std::string_view name : M::names()) p.mesh_dim_names.emplace_back(name);
  p.mesh_sizes.assign(t.mesh().sizes().begin(), t.mesh().sizes().end());
  return p;
}

inline void check_layout_picture(const layout_picture& p) {
  const std::size_t n = p.dim_names.size();
  const std::size_t m = p.mesh_dim_names.size();
  if (p.sizes.size() != n) {
    throw detail::picture_problem(p, n, " dim_names but ", p.sizes.size(),
                                  " sizes (one of each per tensor dim)");
  }
  if (p.mesh_dim_of_dim.size() != n) {
    throw detail::picture_problem(p, n, " dim_names but ", p.mesh_dim_of_dim.size(),
                                  " mesh_dim_of_dim entries (one per tensor dim, -1 if whole)");
  }
  if (p.mesh_sizes.size() != m) {
    throw detail::picture_problem(p, m, " mesh_dim_names but ", p.mesh_sizes.size(),
                                  " mesh_sizes (one of each per mesh dim)");
  }
  // detail::set_coordinates marks the dims it numbers with one bit each in an unsigned
  if (m > 32) throw detail::picture_problem(p, "a mesh of ", m, " dims; at most 32");
  auto check_names = [&](const std::vector<std::string>& names, std::string_view kind) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) throw detail::picture_problem(p, kind, ' ', i, " has no name");
      for (std::size_t j = 0; j < i; ++j) {
        if (names[j] == names[i]) {
          throw detail::picture_problem(p, kind, " '", names[i], "' appears twice");
        }
      }
    }
  };
  check_names(p.dim_names, "dim");
  check_names(p.mesh_dim_names, "mesh dim");
  long long ranks = 1;
  for (std::size_t j = 0; j < m; ++j) {
    if (p.mesh_sizes[j] < 1) {
      throw detail::picture_problem(p, "mesh dim '", p.mesh_dim_names[j], "' has size ",
                                    p.mesh_sizes[j], "; mesh sizes must be at least 1");
    }
    ranks *= p.mesh_sizes[j];
    if (ranks > INT_MAX) {
      throw detail::picture_problem(p, "the mesh has more than ", INT_MAX,
                                    " ranks (an MPI rank is an int)");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int j = p.mesh_dim_of_dim[i];
    if (j < -1 || j >= static_cast<int>(m)) {
      throw detail::picture_problem(p, "dim '", p.dim_names[i], "' is split over mesh dim ", j,
                                    ", but the mesh has ", m, " dims (0 to ", m,
                                    " - 1, or -1 for whole)");
    }
    if (j < 0) continue;
    for (std::size_t k = 0; k < i; ++k) {
      if (p.mesh_dim_of_dim[k] == j) {
        throw detail::picture_problem(p, "dims '", p.dim_names[k], "' and '", p.dim_names[i],
                                      "' are both split over mesh dim '",
                                      p.mesh_dim_names[static_cast<std::size_t>(j)],
                                      "' (illegal layout, Mesh-TensorFlow paper 8.5)");
      }
    }
  }
}

namespace detail {

// parts_of(p): the number of stripes along each dim (1 for a whole dim)
inline std::vector<std::size_t> parts_of(const layout_picture& p) {
  std::vector<std::size_t> parts(p.dim_names.size(), 1);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const int j = p.mesh_dim_of_dim[i];
    if (j >= 0) parts[i] = static_cast<std::size_t>(p.mesh_sizes[static_cast<std::size_t>(j)]);
  }
  return parts;
}

}  // namespace detail

inline std::vector<layout_block> layout_blocks(const layout_picture& p) {
  check_layout_picture(p);
  const std::size_t n = p.dim_names.size();
  const std::vector<std::size_t> parts = detail::parts_of(p);
  std::size_t count = 1;
  for (std::size_t k : parts) count *= k;  // at most the number of ranks: checked above
  std::vector<layout_block> blocks(count);
  int ranks = 1;
  for (int s : p.mesh_sizes) ranks *= s;
  for (int r = 0; r < ranks; ++r) {
    const std::vector<int> coords = detail::coordinates_at(r, p.mesh_sizes);
    std::vector<std::size_t> stripe(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const int j = p.mesh_dim_of_dim[i];
      if (j >= 0) stripe[i] = static_cast<std::size_t>(coords[static_cast<std::size_t>(j)]);
    }
    layout_block& b = blocks[detail::linear_index(stripe, parts)];
    if (b.ranks.empty()) {
      b.stripe = stripe;
      for (std::size_t i = 0; i < n; ++i) {
        b.begin.push_back(detail::stripe_begin(p.sizes[i], parts[i], stripe[i]));
        b.end.push_back(b.begin.back() + detail::stripe_size(p.sizes[i], parts[i], stripe[i]));
      }
    }
    b.ranks.push_back(r);
    b.coordinates.push_back(coords);
  }
  return blocks;
}

inline std::string range_text(const layout_picture& p, const layout_block& block) {
  std::string out;
  for (std::size_t i = 0; i < block.begin.size(); ++i) {
    detail::append(out, i ? ", " : "", p.dim_names[i], ' ', block.begin[i], ':', block.end[i]);
  }
  return out;
}

namespace detail {

// escape_xml(s): s as XML character data or attribute text. Control characters XML 1.0 does
// not allow become '?', so any title makes a well-formed document.
inline std::string escape_xml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

// number(x): a coordinate to 0.1 px, without a trailing ".0"
inline std::string number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", x);
  std::string s = buffer;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// The drawing's measures, in px. Text widths are estimated (no font metrics here): 7 px a
// character at 12 px sans-serif, 6.5 at 11 px; generous enough that labels do not collide.
struct svg_measures {
  static constexpr double margin = 16;
  static constexpr double char_width = 7;
  static constexpr double small_char_width = 6.5;
  static constexpr double line = 16;
  static constexpr double gap = 24;                 // between panels and pictures
  static constexpr std::size_t panels_per_row = 3;  // rank >= 3: panels wrap after this many
};

// One pastel colour a block, in stripe order; neighbours differ.
inline std::string_view block_colour(std::size_t i) {
  static constexpr std::array<std::string_view, 12> palette = {
      "#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99",
      "#8dd3c7", "#bebada", "#80b1d3", "#fccde5", "#d9d9d9", "#ccebc5"};
  return palette[i % palette.size()];
}

// wrap(words, width): the words joined by spaces into lines of at most `width` characters (a
// longer word stands alone)
inline std::vector<std::string> wrap(const std::vector<std::string>& words, std::size_t width) {
  std::vector<std::string> lines;
  for (const std::string& w : words) {
    if (!lines.empty() && lines.back().size() + 1 + w.size() <= width) {
      lines.back() += ' ' + w;
    } else {
      lines.push_back(w);
    }
  }
  return lines;
}

inline std::string text_element(double x, double y, std::string_view text,
                                std::string_view attributes = {}) {
  std::string out = "<text x=\"" + number(x) + "\" y=\"" + number(y) + '"';
  if (!attributes.empty()) {
    out += ' ';
    out += attributes;
  }
  return out + '>' + escape_xml(text) + "</text>\n";
}

// A drawn picture: its SVG elements at the origin, and its size
struct drawn_picture {
  std::string body;
  double width = 0;
  double height = 0;
};

// draw_block(...): one block's group: its rectangle at (x, y) of w x h, and its label
inline std::string draw_block(const layout_picture& p, const layout_block& b, std::size_t index,
                              double x, double y, double w, double h) {
  using ms = svg_measures;
  std::string ranks, coordinates;
  std::vector<std::string> words;
  for (std::size_t k = 0; k < b.ranks.size(); ++k) {
    append(ranks, k ? " " : "", b.ranks[k]);
    std::string c;
    for (std::size_t j = 0; j < b.coordinates[k].size(); ++j) {
      append(c, j ? "," : "", b.coordinates[k][j]);
    }
    append(coordinates, k ? " " : "", c);
  }
  const std::string range = range_text(p, b);
  std::string out = "<g class=\"block\" data-ranks=\"" + ranks + "\" data-coordinates=\"" +
                    coordinates + "\" data-range=\"" + escape_xml(range) + "\">\n";
  // the tooltip: everything, however small the rectangle
  std::string title = (b.ranks.size() == 1 ? "rank " : "ranks ") + ranks;
  if (!p.mesh_dim_names.empty()) title += " at (" + coordinates + ")";
  title += range.empty() ? std::string(": the scalar") : ": " + range;
  out += "<title>" + escape_xml(title) + "</title>\n";
  out += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(w) +
         "\" height=\"" + number(h) + "\" fill=\"" + std::string(block_colour(index)) +
         "\" stroke=\"#333\" stroke-width=\"1\"/>\n";
  // the label: "rank 3" or "ranks 0 2", then the coordinates, wrapped to the rectangle; what
  // does not fit ends in an ellipsis (the tooltip has it all)
  words.push_back(b.ranks.size() == 1 ? "rank" : "ranks");
  for (int r : b.ranks) words.push_back(std::to_string(r));
  const auto width = static_cast<std::size_t>(std::max(1.0, (w - 8) / ms::small_char_width));
  std::vector<std::string> lines = wrap(words, width);
  if (!p.mesh_dim_names.empty()) {
    std::vector<std::string> coordinate_words;
    for (const auto& c : b.coordinates) {
      std::string word = "(";
      for (std::size_t j = 0; j < c.size(); ++j) append(word, j ? "," : "", c[j]);
      coordinate_words.push_back(word + ")");
    }
    for (std::string& l : wrap(coordinate_words, width)) lines.push_back(std::move(l));
  }
  const std::size_t fit = static_cast<std::size_t>(std::max(1.0, (h - 4) / 14));
  if (lines.size() > fit) {
    lines.resize(fit);
    lines.back() = "\u2026";
  }
  double ty = y + h / 2 - 14.0 * static_cast<double>(lines.size()) / 2 + 11;
  for (const std::string& l : lines) {
    out += text_element(x + w / 2, ty, l, "font-size=\"11\" text-anchor=\"middle\"");
    ty += 14;
  }
  return out + "</g>\n";
}

inline drawn_picture draw_picture(const layout_picture& p) {
  using ms = svg_measures;
  const std::vector<layout_block> blocks = layout_blocks(p);  // checks p
  const std::size_t n = p.dim_names.size();
  const std::vector<std::size_t> parts = parts_of(p);
  // the grid: dims n-2 (down) and n-1 (across); rank 1: one row; rank 0: one cell
  const bool has_rows = n >= 2;
  const bool has_cols = n >= 1;
  const std::size_t row_dim = n - 2, col_dim = n - 1;
  const std::size_t leading = n >= 2 ? n - 2 : 0;  // dims faceted into panels
  const double grid_w = n == 0 ? 200 : n >= 3 ? 280 : 360;
  const double grid_h = n <= 1 ? 60 : n >= 3 ? 160 : 200;
  auto stripe_label = [&](std::size_t dim, std::size_t k) {
    std::string s;
    append(s, stripe_begin(p.sizes[dim], parts[dim], k), ':',
           stripe_begin(p.sizes[dim], parts[dim], k) + stripe_size(p.sizes[dim], parts[dim], k));
    return s;
  };
  auto dim_label = [&](std::size_t dim, std::string_view arrow) {
    std::string s = p.dim_names[dim];
    append(s, " (", p.sizes[dim], ") ", arrow);
    return s;
  };
  // the gutter left of the grid holds the row dim's name and its stripes' ranges
  double gutter = 0;
  if (has_rows) {
    std::size_t chars = dim_label(row_dim, "\u2193").size() - 2;  // the arrow: 3 bytes, 1 char
    for (std::size_t k = 0; k < parts[row_dim]; ++k) {
      chars = std::max(chars, stripe_label(row_dim, k).size());
    }
    gutter = static_cast<double>(chars) * ms::char_width + 12;
  }
  // panels: one per combination of stripes of the leading dims, row-major
  std::vector<std::size_t> leading_parts(parts.begin(),
                                         parts.begin() + static_cast<std::ptrdiff_t>(leading));
  std::size_t panels = 1;
  for (std::size_t k : leading_parts) panels *= k;
  const double header = (leading ? 20 : 0) + (has_cols ? 36 : 0);
  const double panel_w = gutter + grid_w, panel_h = header + grid_h;

  drawn_picture out;
  std::string& s = out.body;
  const std::string layout_spelling = [&] {
    std::string l;
    for (std::size_t i = 0; i < n; ++i) {
      const int j = p.mesh_dim_of_dim[i];
      if (j >= 0)
        append(l, l.empty() ? "" : ";", p.dim_names[i], ':',
               p.mesh_dim_names[static_cast<std::size_t>(j)]);
    }
    return l;
  }();
  std::string mesh_spelling = "[";
  for (std::size_t j = 0; j < p.mesh_sizes.size(); ++j) {
    append(mesh_spelling, j ? ", " : "", p.mesh_dim_names[j], ':', p.mesh_sizes[j]);
  }
  mesh_spelling += "]";
  std::string dims_attribute, sizes_attribute, mesh_attribute;
  for (std::size_t i = 0; i < n; ++i) {
    append(dims_attribute, i ? " " : "", p.dim_names[i]);
    append(sizes_attribute, i ? " " : "", p.sizes[i]);
  }
  for (std::size_t j = 0; j < p.mesh_sizes.size(); ++j) {
    append(mesh_attribute, j ? " " : "", p.mesh_dim_names[j], ':', p.mesh_sizes[j]);
  }
  s += "<g class=\"picture\" data-title=\"" + escape_xml(p.title) + "\" data-dims=\"" +
       escape_xml(dims_attribute) + "\" data-sizes=\"" + sizes_attribute + "\" data-layout=\"" +
       escape_xml(layout_spelling) + "\" data-mesh=\"" + escape_xml(mesh_attribute) + "\">\n";
  s += text_element(0, 15, p.title, "font-size=\"15\" font-weight=\"bold\"");
  double width = static_cast<double>(p.title.size()) * 8.5;
  double y = 28;

  for (std::size_t panel = 0; panel < panels; ++panel) {
    const std::size_t column = panel % ms::panels_per_row;
    const double px = static_cast<double>(column) * (panel_w + ms::gap);
    const std::size_t panel_row = panel / ms::panels_per_row;  // whole rows of panels above
    const double py = y + static_cast<double>(panel_row) * (panel_h + ms::gap);
    width = std::max(width, px + panel_w);
    // this panel's stripes of the leading dims
    std::vector<std::size_t> lead_stripe(leading, 0);
    set_coordinates(panel, leading_parts, lead_stripe);
    std::string panel_range;
    for (std::size_t i = 0; i < leading; ++i) {
      append(panel_range, i ? ", " : "", p.dim_names[i], ' ', stripe_label(i, lead_stripe[i]));
    }
    s += "<g class=\"panel\" data-range=\"" + escape_xml(panel_range) + "\">\n";
    double gy = py;
    if (leading) {
      s += text_element(px + gutter, gy + 13, panel_range, "font-style=\"italic\"");
      gy += 20;
    }
    const double gx = px + gutter;
    if (has_cols) {
      s += text_element(gx, gy + 13, dim_label(col_dim, "\u2192"));
      const double w = grid_w / static_cast<double>(parts[col_dim]);
      for (std::size_t k = 0; k < parts[col_dim]; ++k) {
        s += text_element(gx + w * (static_cast<double>(k) + 0.5), gy + 31,
                          stripe_label(col_dim, k), "font-size=\"11\" text-anchor=\"middle\"");
      }
      if (has_rows) s += text_element(px, gy + 31, dim_label(row_dim, "\u2193"));
      gy += 36;
    }
    if (has_rows) {
      const double h = grid_h / static_cast<double>(parts[row_dim]);
      for (std::size_t k = 0; k < parts[row_dim]; ++k) {
        s += text_element(gx - 6, gy + h * (static_cast<double>(k) + 0.5) + 4,
                          stripe_label(row_dim, k), "font-size=\"11\" text-anchor=\"end\"");
      }
    }
    // this panel's blocks: those whose leading stripes are the panel's
    for (std::size_t index = 0; index < blocks.size(); ++index) {
      const layout_block& b = blocks[index];
      if (!std::equal(lead_stripe.begin(), lead_stripe.end(), b.stripe.begin())) continue;
      double x = gx, bw = grid_w, by = gy, bh = grid_h;
      if (has_cols) {
        bw = grid_w / static_cast<double>(parts[col_dim]);
        x += bw * static_cast<double>(b.stripe[col_dim]);
      }
      if (has_rows) {
        bh = grid_h / static_cast<double>(parts[row_dim]);
        by += bh * static_cast<double>(b.stripe[row_dim]);
      }
      s += draw_block(p, b, index, x, by, bw, bh);
    }
    s += "<rect x=\"" + number(gx) + "\" y=\"" + number(gy) + "\" width=\"" + number(grid_w) +
         "\" height=\"" + number(grid_h) +
         "\" fill=\"none\" stroke=\"#000\" stroke-width=\"2\"/>\n";
    s += "</g>\n";
  }
  const std::size_t panel_rows = (panels + ms::panels_per_row - 1) / ms::panels_per_row;
  y += static_cast<double>(panel_rows) * panel_h + static_cast<double>(panel_rows - 1) * ms::gap;

  // the legend
  std::vector<std::string> legend;
  legend.push_back(layout_spelling.empty()
                       ? "layout: replicated (every rank holds the whole tensor)"
                       : "layout: " + layout_spelling);
  std::string mesh_line = "mesh: " + mesh_spelling + ", ranks numbered row-major";
  if (!p.mesh_dim_names.empty()) {
    mesh_line += "; coordinates (";
    for (std::size_t j = 0; j < p.mesh_dim_names.size(); ++j) {
      append(mesh_line, j ? ", " : "", p.mesh_dim_names[j]);
    }
    mesh_line += ")";
  }
  legend.push_back(mesh_line);
  if (n == 0) {
    legend.push_back("a tensor of no dims: one cell");
  } else if (n == 1) {
    legend.push_back("one row: " + p.dim_names[0] + " across");
  } else {
    std::string grid =
        "grid: " + p.dim_names[row_dim] + " down, " + p.dim_names[col_dim] + " across";
    if (leading) {
      grid += "; one panel per stripe of ";
      for (std::size_t i = 0; i < leading; ++i) append(grid, i ? ", " : "", p.dim_names[i]);
    }
    legend.push_back(grid);
  }
  y += 8;
  for (const std::string& l : legend) {
    y += ms::line;
    s += text_element(0, y, l, "fill=\"#333\"");
    width = std::max(width, static_cast<double>(l.size()) * ms::char_width);
  }
  s += "</g>\n";
  out.width = width;
  out.height = y + 4;
  return out;
}

}  // namespace detail

inline std::string draw_svg(const std::vector<layout_picture>& pictures, std::size_t columns) {
  using ms = detail::svg_measures;
  if (columns == 0) throw error("meshpp::draw_svg: columns must be at least 1");
  std::vector<detail::drawn_picture> drawn;
  double column_width = 0;
  for (const layout_picture& p : pictures) {
    drawn.push_back(detail::draw_picture(p));
    column_width = std::max(column_width, drawn.back().width);
  }
  // rows of `columns` pictures, each column as wide as the widest picture, each row as tall as
  // its tallest
  std::string body;
  double y = ms::margin, width = 0;
  for (std::size_t first = 0; first < drawn.size(); first += columns) {
    if (first) y += ms::gap * 2;
    double row_height = 0;
    for (std::size_t i = first; i < std::min(first + columns, drawn.size()); ++i) {
      const double x = ms::margin + static_cast<double>(i - first) * (column_width + ms::gap * 2);
      body += "<g transform=\"translate(" + detail::number(x) + ' ' + detail::number(y) + ")\">\n" +
              drawn[i].body + "</g>\n";
      row_height = std::max(row_height, drawn[i].height);
      width = std::max(width, x + drawn[i].width);
    }
    y += row_height;
  }
  const std::string w = detail::number(width + ms::margin), h = detail::number(y + ms::margin);
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w + ' ' + h +
      "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  return out + body + "</svg>\n";
}

inline std::string draw_svg(const layout_picture& p) {
  return draw_svg(std::vector<layout_picture>{p}, 1);
}

inline void write_svg(const std::filesystem::path& path, std::string_view svg) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    throw error("meshpp::write_svg: cannot open '" + path.string() +
                "' for writing: " + std::strerror(errno));
  }
  file.write(svg.data(), static_cast<std::streamsize>(svg.size()));
  file.close();
  if (!file) throw error("meshpp::write_svg: writing '" + path.string() + "' failed");
}

}  // namespace meshpp
