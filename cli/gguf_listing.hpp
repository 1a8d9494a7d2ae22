// cli/gguf_listing.hpp: GGUF files in `tlio inspect` (tlio/gguf.hpp).
#pragma once

#include <string>

#include "tlio/gguf.hpp"

namespace tlio::cli {

/// `f` as `tlio inspect` lists it: the header, the metadata (arrays by their first values) and
/// the tensors with their ggml types and numpy-order shapes; or its JSON document, appended to
/// `json_out` (printed when that is null).
void print_gguf(const tlio::GgufFile& f, bool json, std::string* json_out);

}  // namespace tlio::cli
