// tlio/version.hpp: the library version, at compile time and at run time.
#pragma once

#define TLIO_VERSION_MAJOR 0
#define TLIO_VERSION_MINOR 2
#define TLIO_VERSION_PATCH 0
#define TLIO_VERSION_STRING "0.2.0"

#include "tlio/export.hpp"

namespace tlio {
/// Version of the library actually linked (may differ from TLIO_VERSION_STRING of the headers).
TLIO_API const char* version() noexcept;
}  // namespace tlio
