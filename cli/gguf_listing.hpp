// cli/gguf_listing.hpp: GGUF files in `tlio inspect` and `tlio validate` (tlio/gguf.hpp).
#pragma once

#include <string>

#include "tlio/gguf.hpp"

namespace tlio::cli {

/// Whether `path` names a GGUF file: a name ending in .gguf, or a local regular file starting
/// with GGUF's magic (pipes and devices are not read to find out).
bool is_gguf_input(const std::string& path);

/// `f` as `tlio inspect` lists it: the header, the metadata (arrays by their first values) and
/// the tensors with their ggml types and numpy-order shapes; or its JSON document, appended to
/// `json_out` (printed when that is null).
void print_gguf(const tlio::GgufFile& f, bool json, std::string* json_out);

}  // namespace tlio::cli
