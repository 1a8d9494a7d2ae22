// tlio/edit.hpp: editing a file's metadata and its set of tensors (keep, drop, rename) without
// touching the tensors' bytes: `tlio metadata` and `tlio convert --keep/--drop/--rename`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/header.hpp"
#include "tlio/writer.hpp"

namespace tlio {

/// Which tensors a rewrite keeps and what it calls them. Regexes are ECMAScript, searched in
/// names (not anchored: write ^ and $ to anchor). keep and drop see the source's names; rename
/// rules run in order, each on the result of the one before, replacing every match (`\1`..`\9`
/// insert groups, `\0` the whole match). A quantized weight (find_quantized_weights) moves as a
/// whole or not at all: keep and drop decide on its logical name (a drop regex that matches a
/// stored tensor of a kept weight, or a keep regex one of a weight left out, is an error), and
/// its stored tensors are renamed together, as the common prefix of their names (the layer's
/// path) is renamed.
struct TensorSelection {
  std::vector<std::string> keep;  ///< a tensor must match one of these; empty: every tensor
  std::vector<std::string> drop;  ///< a tensor matching any of these is left out
  std::vector<std::pair<std::string, std::string>> rename;  ///< (regex, replacement)

  bool empty() const noexcept { return keep.empty() && drop.empty() && rename.empty(); }
};

struct EditOptions {
  Metadata set_metadata;                     ///< entries added or replaced
  std::vector<std::string> delete_metadata;  ///< keys removed (each must exist)
  TensorSelection tensors;
  ProgressCallback progress;  ///< data bytes copied / total (rewrites only)
  OpenOptions open;           ///< how `src` is opened (a URL's token)
};

struct EditReport {
  size_t kept = 0;     ///< tensors written (renamed ones included)
  size_t dropped = 0;  ///< tensors left out
  size_t renamed = 0;  ///< tensors whose name changed
  size_t ties_removed =
      0;  ///< tie records ({alias: tensor} metadata) removed with their tensor or alias
  size_t ties_repointed = 0;       ///< tied tensors left out but written under a kept alias
  bool in_place = false;           ///< only the header was rewritten, in the file itself
  uint64_t data_bytes = 0;         ///< data bytes of the result
  uint64_t source_data_bytes = 0;  ///< data bytes of the source
  Metadata metadata;               ///< the result's metadata
};

/// Edits `src` into `dst`, or into `src` itself when `dst` is empty or names the same file.
/// The tensors' bytes are copied in the kernel where the OS allows (copy_file_range), never
/// through this process's memory, and the result replaces `dst` atomically. In place, when
/// only the header changes and the new canonical header has exactly the old one's length, the
/// header alone is overwritten in one write and synced; its tensors' bytes are not rewritten.
/// Throws Error{invalid_argument}, with nothing written, for a bad regex, a rename that makes
/// two tensors one name (naming both), a name the format forbids, deleting a key that is not
/// there, a selection that would split a quantized weight, or one that leaves no tensor of a
/// file that had some.
TLIO_API EditReport edit_file(const std::filesystem::path& src, const std::filesystem::path& dst,
                              const EditOptions& options);

}  // namespace tlio
