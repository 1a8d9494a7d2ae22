// Compiled against format's include root by CTest, and expected to compile: the modules below
// format (dtype, io, common) and the public headers they own are visible.
#include "common/checked.hpp"
#include "dtype/minifloat.hpp"
#include "io/source.hpp"
#include "tlio/file.hpp"
