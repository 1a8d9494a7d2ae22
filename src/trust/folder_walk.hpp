// trust/folder_walk.hpp: the files of a local folder as hashes and signatures name them.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// The regular files under `folder`, as relative POSIX paths in path order (component by
/// component: "a/x" before "a-b", as model-signing sorts them). `skip(rel)` is asked for each
/// entry (a folder skipped is not entered). With `follow_file_links`, a symbolic link to a
/// regular file counts as one; any other link or special file is Error{unsupported}.
std::vector<std::string> walk_folder(const std::string& folder, bool follow_file_links,
                                     const std::function<bool(const std::string& rel)>& skip);

/// `a` before `b` in path order (component by component, each compared as bytes).
bool path_order(std::string_view a, std::string_view b) noexcept;

}  // namespace tlio::detail
