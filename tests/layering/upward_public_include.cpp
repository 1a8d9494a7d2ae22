// Compiled against format's include root by CTest, and expected to fail: the public header of a
// module above format (model) is not there either.
#include "tlio/model.hpp"
