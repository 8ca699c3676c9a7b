// meshpp/fwd.hpp — forward declarations of meshpp's public class templates.
// This header includes nothing but <cstddef>, and declares nothing it does not name here.
#pragma once

#include <cstddef>

namespace meshpp {

template <class Name>
struct dim;
template <class Dim>
struct dim_extent;
template <class... Dims>
struct shape;
template <class... Dims>
class extents;
template <class TensorDim, class MeshDim>
struct split;
template <class... Splits>
struct layout;
template <class... MeshDims>
struct axes;
template <class Axes, class Rules>
class mesh;
template <class T, class Shape, class Layout, class Mesh>
class tensor;
class environment;
class error;

}  // namespace meshpp
