// io/location.hpp: what a name given to tlio points at: a local path, or a URL whose scheme a
// store is registered for (io/store.cpp). The one place such a name is parsed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tlio::detail {

/// The name that means standard input where a file is read and standard output where one is
/// written (io/stdio_store.cpp).
inline constexpr std::string_view kStandardStream = "-";

class Location {
 public:
  /// "scheme://rest" with a registered scheme is that store's, with any other scheme
  /// Error{unsupported} ("unsupported URL scheme 'ftp'"); "-" is standard input or output;
  /// anything else is a local path (a file named "ftp:x" or "/data/http://x" stays a file).
  static Location parse(std::string_view text);
  /// A path known to be local (from a listing of a local folder): never parsed as a URL or "-".
  static Location local(const std::filesystem::path& path) { return Location({}, path.string()); }

  /// "" for a local path, "-" for standard input or output; else the URL's scheme ("http").
  const std::string& scheme() const noexcept { return scheme_; }
  bool is_local() const noexcept { return scheme_.empty(); }
  /// "-": standard input or output (the one test for it).
  bool is_standard_stream() const noexcept { return scheme_ == kStandardStream; }
  /// The location as given: the path, or the whole URL (credentials included: never print it).
  const std::string& text() const noexcept { return text_; }
  /// The local path (is_local() only).
  std::filesystem::path path() const { return text_; }
  /// The location as messages name it: a URL without user and password.
  const std::string& display() const noexcept { return display_; }
  /// The file `name` inside this directory location, as its store joins names.
  Location join(std::string_view name) const;

 private:
  Location(std::string scheme, std::string text);
  std::string scheme_, text_, display_;
};

}  // namespace tlio::detail
