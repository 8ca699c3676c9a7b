// meshpp/version.hpp — meshpp's version, the one of project(meshpp VERSION ...) in
// CMakeLists.txt (lint/version fails when the two disagree).
//
// MESHPP_VERSION is one integer for the preprocessor, major * 10000 + minor * 100 + patch
// (0.1.0 is 100, 1.2.3 would be 10203; minor and patch stay below 100):
//
//   #if MESHPP_VERSION >= 10200   // meshpp 1.2.0 or later
#pragma once

#define MESHPP_VERSION_MAJOR 0
#define MESHPP_VERSION_MINOR 1
#define MESHPP_VERSION_PATCH 0
#define MESHPP_VERSION \
  (MESHPP_VERSION_MAJOR * 10000 + MESHPP_VERSION_MINOR * 100 + MESHPP_VERSION_PATCH)
#define MESHPP_VERSION_STRING "0.1.0"
