// io/folder_walk.cpp: one recursive walk of a local folder.
#include "io/folder_walk.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <system_error>

#include "io/os_file.hpp"

namespace tlio::detail {

void walk_local_folder(const std::filesystem::path& root, bool skip_unreadable,
                       const std::function<bool(const FolderEntry&)>& visit) {
  namespace fs = std::filesystem;
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) throw_errno("cannot list it", root.string(), errno);
  if (!S_ISDIR(st.st_mode)) throw_errno("cannot list it", root.string(), ENOTDIR);
  std::error_code ec;
  fs::recursive_directory_iterator it(
      root,
      skip_unreadable ? fs::directory_options::skip_permission_denied : fs::directory_options::none,
      ec);
  if (ec) throw_errno("cannot list it", root.string(), ec.value());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw_errno("cannot list it", root.string(), ec.value());
    const fs::directory_entry& entry = *it;
    const fs::file_status self = entry.symlink_status(ec);
    if (ec) throw_errno("cannot look at it", entry.path().string(), ec.value());
    FolderEntry e{entry.path().lexically_relative(root).generic_string(),
                  FolderEntry::Kind::special};
    if (fs::is_directory(self))
      e.kind = FolderEntry::Kind::folder;
    else if (fs::is_regular_file(self))
      e.kind = FolderEntry::Kind::file;
    else if (fs::is_symlink(self))
      e.kind = fs::is_regular_file(entry.status(ec)) ? FolderEntry::Kind::link_to_file
                                                     : FolderEntry::Kind::other_link;
    if (!visit(e) && e.kind == FolderEntry::Kind::folder) it.disable_recursion_pending();
  }
  if (ec) throw_errno("cannot list it", root.string(), ec.value());  // the step that ended the walk
}

}  // namespace tlio::detail
