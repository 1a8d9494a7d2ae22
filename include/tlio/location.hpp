// tlio/location.hpp: the names tlio takes for files and folders: a local path, "-" (standard
// input or output), or a URL of a scheme it reads (http, https, s3, gs, hf).
#pragma once

#include <string>
#include <string_view>

#include "tlio/export.hpp"

namespace tlio {

/// `location` as tlio's own messages name it, safe to print or log: a URL without its user and
/// password, its fragment, or the values of its query (a presigned URL's signature, a token); a
/// path (even one holding "://", "?" or "#") as it is.
TLIO_API std::string display_location(std::string_view location);

/// Whether `location` names standard input (as a source) or standard output (as an output): "-".
TLIO_API bool is_standard_stream(std::string_view location) noexcept;

}  // namespace tlio
