// format/writer_access.hpp: writers whose files are published as part of a set.
#pragma once

#include <filesystem>

#include "io/atomic_file.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

struct WriterAccess {
  /// Writer::to_file for a location already parsed.
  static Writer to_file(const Location& where);
  /// A writer to `where` whose commit() checks the file is complete and adds it to `set`, which
  /// publishes it with the set's other files.
  static Writer into_set(OutputSet& set, const Location& where);
};

}  // namespace tlio::detail
