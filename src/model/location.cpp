// model/location.cpp: reading a model directory's files from a folder or a directory URL.
#include "model/location.hpp"

#include <fmt/core.h>

#include <span>

#include "io/http.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {
bool not_found(const Error& e) { return e.os_error() == std::errc::no_such_file_or_directory; }
}  // namespace

ModelLocation::ModelLocation(const std::filesystem::path& dir, OpenOptions options)
    : dir_(dir), is_url_(detail::is_url(dir.native())), options_(std::move(options)) {
  if (is_url_) {
    url_ = dir.native();
    name_ = url_for_messages(url_);
  } else {
    name_ = dir.string();
  }
}

std::string ModelLocation::path_of(std::string_view file) const {
  return is_url_ ? url_join(url_, file) : (dir_ / file).string();
}

std::string ModelLocation::name_of(std::string_view file) const {
  return is_url_ ? url_for_messages(path_of(file)) : path_of(file);
}

std::optional<std::string> ModelLocation::read_text(std::string_view file) const {
  const std::string path = path_of(file);
  if (!is_url_) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    return read_text_file(path);
  }
  std::shared_ptr<HttpFile> f;
  try {
    f = HttpFile::open(path, {.token = options_.token});
  } catch (const Error& e) {
    if (not_found(e)) return std::nullopt;
    throw;
  }
  if (f->size() > kMaxTextFileSize)
    throw_io(fmt::format("{} bytes is over the limit of {} for a JSON file", f->size(), kMaxTextFileSize),
             name_of(file));
  std::string text(static_cast<size_t>(f->size()), '\0');
  f->read(0, std::as_writable_bytes(std::span(text)));  // from the opening request's bytes, mostly
  return text;
}

bool ModelLocation::exists(std::string_view file) const {
  const std::string path = path_of(file);
  if (!is_url_) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }
  try {
    HttpFile::open(path, {.token = options_.token}, 1);  // one byte: does it exist
    return true;
  } catch (const Error& e) {
    if (not_found(e)) return false;
    throw;
  }
}

File ModelLocation::open(std::string_view file) const { return File::open(path_of(file), options_); }

bool is_model_directory(const std::filesystem::path& path, const OpenOptions& options) {
  const std::string& name = path.native();
  if (!detail::is_url(name)) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
  }
  if (url_ends_with_slash(name)) return true;
  const std::string_view p = std::string_view(name).substr(0, name.find_first_of("?#"));
  if (p.ends_with(".safetensors")) return false;
  try {
    return ModelLocation(path, options).exists("config.json");
  } catch (const Error& e) {
    // The server cannot be reached: the message names what was given, not the probe.
    throw Error(e.code(), e.rule(), e.tensor(), e.offset(), e.detail(), url_for_messages(name), e.os_error());
  }
}

}  // namespace tlio::detail
