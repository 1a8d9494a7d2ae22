// io/store.hpp: a kind of place files live (local folders, HTTP servers), registered by URL
// scheme in io/store.cpp. A store opens ByteSources and answers the few questions model
// directories ask of it. Adding a kind of location is one Store and one line in the table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/location.hpp"
#include "io/os_file.hpp"
#include "io/source.hpp"
#include "io/staged_file.hpp"

namespace tlio::detail {

struct SourceOptions {
  /// How a local file is read: mapped read-only, mapped privately (copy-on-write: views may be
  /// written), with positional reads, or with O_DIRECT reads past the page cache, many in
  /// flight (io/direct_source.hpp). Remote stores read by ranges whatever it says.
  enum class Access { map_shared, map_private, read, direct } access = Access::map_shared;
  /// A credential for remote stores (http: a bearer token for the URL's own origin). Never in
  /// a message.
  std::string token = {};
  /// Warnings about how a source is read (OpenOptions::warning). Empty: none.
  std::function<void(std::string_view)> warning = {};
};

/// A source over an open regular file (a local file, a temporary), read as `access` says.
std::shared_ptr<const ByteSource> descriptor_source(Fd fd, std::string name,
                                                    SourceOptions::Access access);

class Store {
 public:
  virtual ~Store() = default;
  /// Opens one version of the file at `where`. Error{io} naming where.display(), with errno
  /// (ENOENT when there is no such file); Error{unsupported} when what the store needs (libcurl)
  /// cannot be loaded.
  virtual std::shared_ptr<const ByteSource> open(const Location& where,
                                                 const SourceOptions& options) const = 0;
  /// The whole of a small file (at most kMaxTextFileSize bytes), or nullopt when there is none.
  virtual std::optional<std::string> read_small(const Location& where,
                                                const SourceOptions& options) const = 0;
  virtual bool exists(const Location& where, const SourceOptions& options) const = 0;
  /// True or false when the store can tell whether `where` is a directory without asking for a
  /// file in it; nullopt when it cannot (HTTP has no listing).
  virtual std::optional<bool> is_directory(const Location& where) const = 0;
  /// Throws Error{io} when `where` cannot be a directory (missing: ENOENT; a file: ENOTDIR).
  /// Stores without directories accept every location.
  virtual void check_directory(const Location& where) const = 0;
  /// The file or folder on this machine that `where` names, for work on the node itself
  /// (hashing a named pipe, editing a header in place, looking into a folder before opening it:
  /// free locally, a request elsewhere); nullopt for stores whose files are not nodes here.
  virtual std::optional<std::filesystem::path> local_node(const Location&) const {
    return std::nullopt;
  }
  /// The location of `name` inside the directory `dir` (of this store).
  virtual std::string join(const std::string& dir, std::string_view name) const = 0;
  /// `text` as messages show it (without credentials).
  virtual std::string display(const std::string& text) const = 0;

  /// A new file at `where`, staged until it is published whole (io/staged_file.hpp).
  /// Error{unsupported} for stores that take no writes.
  virtual std::unique_ptr<StagedFile> stage(const Location& where) const;
  /// Removes the file at `where`, if there is one (a local store removes regular files only).
  /// Error{unsupported} for stores that take no writes.
  virtual void remove(const Location& where) const;
  /// Makes `where` a folder files can be staged in (local: with its parents); stores whose
  /// folders are only key prefixes have nothing to make.
  virtual void make_directory(const Location& where) const;
};

/// The store registered for `scheme` ("" is local files), or null.
const Store* find_store(std::string_view scheme) noexcept;
/// The store of `where` (always registered: Location::parse only makes registered schemes).
const Store& store_of(const Location& where) noexcept;

/// Opens `where` with its store.
inline std::shared_ptr<const ByteSource> open_source(const Location& where,
                                                     const SourceOptions& options) {
  return store_of(where).open(where, options);
}

/// `name` inside the key prefix `dir` ("s3://b/models" + "x" is "s3://b/models/x"), as object
/// stores and the Hub name files (no escaping: keys are taken as written).
std::string join_key(const std::string& dir, std::string_view name);

/// A descriptor of the whole file at `where`: the local file itself, or a remote one
/// downloaded once into an unnamed temporary (it vanishes when closed). For readers that need
/// every byte mapped (PyTorch checkpoints).
Fd open_whole_file(const Location& where, const SourceOptions& options = {});

}  // namespace tlio::detail
