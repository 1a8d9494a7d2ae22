// Compiled against format's include root by CTest, and expected to fail: format may not see
// model, a module above it (docs/architecture.md, "The build enforces it").
#include "model/layout.hpp"
