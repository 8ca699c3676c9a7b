// meshpp/core/detail/agree.hpp — failing together on input one rank sees, kept at its former path
// for the programs that include it here: it lives in meshpp/core/agree.hpp, since layers above core
// use it too.
#pragma once

#include "meshpp/core/agree.hpp"
