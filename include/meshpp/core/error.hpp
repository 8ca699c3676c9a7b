// meshpp/core/error.hpp — the one exception type meshpp throws for bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace meshpp {

/// @brief Thrown for bad input that only run-time values can reveal (sizes, rank counts,
/// array shapes). meshpp raises it only from checks that depend on values every rank has,
/// before any communication, so every rank of a correct SPMD program throws the same error
/// ("fail together") and no rank is left waiting in a collective.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace meshpp
