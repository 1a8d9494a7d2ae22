// trust/hash.hpp: what hash.cpp gives model signing besides the public API: a folder's files as
// hashes and signatures name them (in path order, links and special files refused), names as
// messages show them, and many files hashed on several threads, results in order.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/trust.hpp"

namespace tlio::detail {

/// The regular files under `folder`, as relative POSIX paths in path order (component by
/// component: "a/x" before "a-b", as model-signing sorts them). `skip(rel)` is asked for each
/// entry (a folder skipped is not entered). With `follow_file_links`, a symbolic link to a
/// regular file counts as one. Any other link or special file is Error{unsupported}, or, with
/// `refused`, an entry there, as is a folder below `folder` that cannot be read (not entered).
std::vector<std::string> walk_folder(const std::string& folder, bool follow_file_links,
                                     const std::function<bool(const std::string& rel)>& skip,
                                     std::vector<SkippedEntry>* refused = nullptr);

/// A name as messages show it: as is, or JSON-quoted when it holds control characters (a
/// name from a stranger's file must not move the terminal's cursor) or is empty.
std::string shown_name(std::string_view name);

/// hash_files, with `pipes`: a FIFO among the locations is read to its end; without, it is
/// refused like any file that is not regular (a folder's files).
void hash_many(std::span<const std::string> locations, const HashOptions& options, bool pipes,
               const std::function<void(size_t, const FileHash&, const Error*)>& done);

/// `a` before `b` in path order (component by component, each compared as bytes).
bool path_order(std::string_view a, std::string_view b) noexcept;

}  // namespace tlio::detail
