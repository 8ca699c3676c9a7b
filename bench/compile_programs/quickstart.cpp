// quickstart: the README's program (examples/quickstart/quickstart.cpp of the tree being
// measured, found through -I<tree>/examples/quickstart): one mesh and a few operations, nothing
// trained; the smallest translation unit of bench/compile, what any program including meshpp
// pays.
#include <quickstart.cpp>
