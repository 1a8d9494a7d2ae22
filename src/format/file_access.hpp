// format/file_access.hpp: what the library's other modules may ask of a File beyond its public
// API: the source its bytes come from (so a copy can ask what the source can do), and opening
// a parsed location.
#pragma once

#include <memory>

#include "io/location.hpp"
#include "io/source.hpp"
#include "io/store.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

struct FileAccess {
  static File make(std::shared_ptr<const FileState> state);
  static const ByteSource& source(const File& f) noexcept;
};

/// File::open of a location already parsed (a model directory's files).
File open_file(const Location& where, const OpenOptions& options);

/// How a store opens a source for these options (other containers open theirs alike).
SourceOptions source_options(const OpenOptions& options);

}  // namespace tlio::detail
