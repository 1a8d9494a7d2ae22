// io/folder_walk.hpp: the entries of a local folder, recursively. The one walker under model
// folders (model/folder: what validate and inspect find) and folder hashes and signatures
// (trust), which differ only in what they keep.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace tlio::detail {

struct FolderEntry {
  enum class Kind {
    folder,        ///< a folder (not a link to one): entered after visit() unless it says no
    file,          ///< a regular file
    link_to_file,  ///< a symbolic link to a regular file
    other_link,    ///< a symbolic link to anything else (a folder, a device), or dangling
    special,       ///< a FIFO, socket or device
  };
  std::string rel;  ///< the path below the root, '/'-separated
  Kind kind;
};

/// Calls `visit` for every entry below the local folder `root`, in the order the system lists
/// them; links are never followed into folders. A folder for which `visit` returns false is not
/// entered. Error{io} when `root` is not a folder (ENOTDIR) or cannot be listed; a folder below
/// it that cannot be read is passed over with `skip_unreadable`, an Error{io} without.
void walk_local_folder(const std::filesystem::path& root, bool skip_unreadable,
                       const std::function<bool(const FolderEntry&)>& visit);

}  // namespace tlio::detail
