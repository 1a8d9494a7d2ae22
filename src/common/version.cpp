// version.cpp: the version of the library actually linked (tlio/version.hpp).
#include "tlio/version.hpp"

namespace tlio {

const char* version() noexcept { return TLIO_VERSION_STRING; }

}  // namespace tlio
