// model/location.cpp: reading a model directory's files from a folder of any store.
#include "model/location.hpp"

#include "format/file_access.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

ModelLocation::ModelLocation(Location dir, OpenOptions options)
    : dir_(std::move(dir)),
      store_(&store_of(dir_)),
      options_(std::move(options)),
      source_options_{.token = options_.token, .warning = options_.warning} {}

std::optional<std::string> ModelLocation::read_text(std::string_view file) const {
  return store_->read_small(dir_.join(file), source_options_);
}

bool ModelLocation::exists(std::string_view file) const {
  return store_->exists(dir_.join(file), source_options_);
}

File ModelLocation::open(std::string_view file) const {
  return open_file(dir_.join(file), options_);
}

bool is_model_directory(const Location& where, const OpenOptions& options) {
  if (const std::optional<bool> by_store = store_of(where).is_directory(where)) return *by_store;
  try {
    return ModelLocation(where, options).exists(kConfigFile);
  } catch (const Error& e) {
    // The server cannot be reached: the message names what was given, not the probe.
    throw Error(e.code(), e.rule(), e.tensor(), e.offset(), e.detail(), where.display(),
                e.os_error());
  }
}

}  // namespace tlio::detail
