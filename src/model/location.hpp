// model/location.hpp: where a model directory's files come from: a local folder, or a directory
// URL whose files are fetched by name (HTTP has no listing: config.json, then the shard index or
// model.safetensors).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tlio/file.hpp"

namespace tlio::detail {

class ModelLocation {
 public:
  ModelLocation(const std::filesystem::path& dir, OpenOptions options);

  bool is_url() const noexcept { return is_url_; }
  /// The directory as messages name it (a URL without its credentials).
  const std::string& name() const noexcept { return name_; }
  /// The name of `file` inside it, as messages show it.
  std::string name_of(std::string_view file) const;
  /// The whole of a small text file (JSON, at most kMaxTextFileSize bytes), or nullopt when
  /// the directory has no such file.
  std::optional<std::string> read_text(std::string_view file) const;
  bool exists(std::string_view file) const;
  File open(std::string_view file) const;

 private:
  std::string path_of(std::string_view file) const;

  std::filesystem::path dir_;
  std::string url_;  // when is_url_
  std::string name_;
  bool is_url_ = false;
  OpenOptions options_;
};

/// True when `path` is a model directory rather than a file: a local folder, a URL ending in
/// '/', or a URL not ending in ".safetensors" under which config.json exists (one request).
bool is_model_directory(const std::filesystem::path& path, const OpenOptions& options);

}  // namespace tlio::detail
