// meshpp/core/detail/checked.hpp — the checked MPI path, kept at its former path for the programs
// that include it here: it lives in meshpp/core/checked.hpp, since layers above core use it too.
#pragma once

#include "meshpp/core/checked.hpp"
