// model/location.hpp: where a model directory's files come from: a folder of any store, its
// files asked for by name (a store without listings, such as HTTP, is never listed: config.json,
// then the shard index or model.safetensors).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "io/location.hpp"
#include "io/store.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

class ModelLocation {
 public:
  ModelLocation(Location dir, OpenOptions options);

  /// The directory as messages name it (a URL without its credentials).
  const std::string& name() const noexcept { return dir_.display(); }
  /// The name of `file` inside it, as messages show it.
  std::string name_of(std::string_view file) const { return dir_.join(file).display(); }
  /// Error{io} when it cannot be a directory: missing (ENOENT) or a file (ENOTDIR).
  void check_directory() const { store_->check_directory(dir_); }
  /// The whole of a small text file (JSON, at most kMaxTextFileSize bytes), or nullopt when
  /// the directory has no such file.
  std::optional<std::string> read_text(std::string_view file) const;
  bool exists(std::string_view file) const;
  File open(std::string_view file) const;

 private:
  Location dir_;
  const Store* store_;
  OpenOptions options_;
  SourceOptions source_options_;
};

/// True when `where` is a model directory rather than a file: a local folder, a URL ending in
/// '/', or a URL not ending in ".safetensors" under which config.json exists (one request).
bool is_model_directory(const Location& where, const OpenOptions& options);

}  // namespace tlio::detail
