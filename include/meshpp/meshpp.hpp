// meshpp/meshpp.hpp — the whole public library in one include.
#pragma once

#include "meshpp/fwd.hpp"

#include "meshpp/core/create.hpp"
#include "meshpp/core/dim.hpp"
#include "meshpp/core/environment.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/random.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

#include "meshpp/comm/agree.hpp"
#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/counters.hpp"
#include "meshpp/comm/permute.hpp"

#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/expr/functions.hpp"

#include "meshpp/ops/einsum.hpp"
#include "meshpp/ops/embedding.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/relayout.hpp"
#include "meshpp/ops/reshape.hpp"
#include "meshpp/ops/scatter_gather.hpp"
#include "meshpp/ops/shift.hpp"
#include "meshpp/ops/slice.hpp"

#include "meshpp/io/idx.hpp"

#include "meshpp/autodiff/einsum.hpp"
#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/embedding.hpp"
#include "meshpp/autodiff/gradients.hpp"
#include "meshpp/autodiff/movement.hpp"
#include "meshpp/autodiff/reduce.hpp"
#include "meshpp/autodiff/traced.hpp"

#include "meshpp/nn/dense.hpp"
#include "meshpp/nn/dropout.hpp"
#include "meshpp/nn/embedding.hpp"
#include "meshpp/nn/layer_norm.hpp"
#include "meshpp/nn/softmax_cross_entropy.hpp"
#include "meshpp/nn/variables.hpp"

#include "meshpp/optim/adafactor.hpp"
#include "meshpp/optim/adam.hpp"
#include "meshpp/optim/optimizer.hpp"
#include "meshpp/optim/sgd.hpp"
