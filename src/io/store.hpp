// io/store.hpp: a kind of place files live (local folders, HTTP servers), registered by URL
// scheme in io/store.cpp. A store opens ByteSources and answers the few questions model
// directories ask of it. Adding a kind of location is one Store and one line in the table.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/location.hpp"
#include "io/os_file.hpp"
#include "io/source.hpp"

namespace tlio::detail {

struct SourceOptions {
  /// How a local file is read: mapped read-only, mapped privately (copy-on-write: views may be
  /// written), or with positional reads. Remote stores read by ranges whatever it says.
  enum class Access { map_shared, map_private, read } access = Access::map_shared;
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
  /// The location of `name` inside the directory `dir` (of this store).
  virtual std::string join(const std::string& dir, std::string_view name) const = 0;
  /// `text` as messages show it (without credentials).
  virtual std::string display(const std::string& text) const = 0;

  /// Whether files can be written here (upload, remove).
  virtual bool writable() const noexcept { return false; }
  /// Makes the `size` bytes of the regular file `fd` the file at `where`, all at once: readers
  /// see the previous version (or none) until it is whole. Stops with Error{interrupted} when
  /// `should_stop` says so, leaving nothing behind. `fd` is a staging copy: its bytes may be
  /// discarded as they are sent. Error{unsupported} for stores that take no writes.
  virtual void upload(const Location& where, int fd, uint64_t size,
                      const std::function<bool()>& should_stop) const;
  /// Removes the file at `where`, if there is one.
  virtual void remove(const Location& where) const;
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
