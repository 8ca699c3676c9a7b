// expect-error: meshpp::set_inference\(model, on\): layers\(\) must return std::tie\(\.\.\.\) of the model's members, not copies
// expect-error: layers_must_return_std_tie_of_members<model>
//
// set_inference writes through the parts layers() names: a tuple of copies would switch the
// copies and leave the model's own dropout on. The twin returns std::tie of the members.
#include <meshpp/autodiff/parameters.hpp>
#include <meshpp/nn/dropout.hpp>

#include <tuple>

struct model {
  meshpp::dropout_layer drop{0.1, 7};
#ifndef MESHPP_COMPILE_FAIL_TWIN
  auto layers() const { return std::tuple(drop); }
#else
  auto layers() const { return std::tie(drop); }
#endif
};

// never called: cases are only compiled
void evaluate(model& m) { meshpp::set_inference(m, true); }
