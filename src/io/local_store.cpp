// io/local_store.cpp: local files, mapped (shared or private), read with positional reads, or
// read past the page cache (direct_source).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "io/direct_source.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

// Positional reads: views own copies; the kernel copies straight from the descriptor.
class ReadSource final : public ByteSource {
 public:
  ReadSource(Fd fd, uint64_t size, std::string name)
      : ByteSource(std::move(name), size), fd_(std::move(fd)) {}
  int descriptor() const noexcept override { return fd_.get(); }
  void read(uint64_t offset, std::span<std::byte> dst) const override {
    pread_into_new_memory(fd_.get(), offset, dst, name());  // mostly new: views, copies, tensors
  }

 private:
  Fd fd_;
};

// A whole-file mapping; the descriptor stays open for in-kernel copies.
class MappedSource final : public ByteSource {
 public:
  MappedSource(Fd fd, uint64_t size, std::string name, bool private_copy)
      : ByteSource(std::move(name), size),
        fd_(std::move(fd)),
        mapping_(fd_.get(), size, this->name(), private_copy) {
    set_memory(mapping_.bytes(), private_copy);
  }
  int descriptor() const noexcept override { return fd_.get(); }

 private:
  Fd fd_;
  Mapping mapping_;
};

}  // namespace

std::shared_ptr<const ByteSource> descriptor_source(Fd fd, std::string name,
                                                    SourceOptions::Access access) {
  const uint64_t size = fd_size(fd.get(), name);
  if (access == SourceOptions::Access::direct)
    return direct_source(std::move(fd), size, std::move(name));
  if (access == SourceOptions::Access::read)
    return std::make_shared<ReadSource>(std::move(fd), size, std::move(name));
  return std::make_shared<MappedSource>(std::move(fd), size, std::move(name),
                                        access == SourceOptions::Access::map_private);
}

namespace {

class LocalStore final : public Store {
 public:
  std::shared_ptr<const ByteSource> open(const Location& where,
                                         const SourceOptions& options) const override {
    return descriptor_source(open_read(where.path()), where.display(), options.access);
  }

  std::optional<std::string> read_small(const Location& where,
                                        const SourceOptions&) const override {
    std::error_code ec;
    if (!std::filesystem::exists(where.path(), ec)) return std::nullopt;
    return read_text_file(where.path());
  }

  bool exists(const Location& where, const SourceOptions&) const override {
    std::error_code ec;
    return std::filesystem::exists(where.path(), ec);
  }

  std::optional<bool> is_directory(const Location& where) const override {
    std::error_code ec;
    return std::filesystem::is_directory(where.path(), ec);
  }

  void check_directory(const Location& where) const override {
    std::error_code ec;
    const auto status = std::filesystem::status(where.path(), ec);
    if (!std::filesystem::exists(status))
      throw_io("cannot open", where.display(),
               ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory));
    if (!std::filesystem::is_directory(status))
      throw_io("cannot open as a model", where.display(),
               std::make_error_code(std::errc::not_a_directory));
  }

  std::optional<std::filesystem::path> local_node(const Location& where) const override {
    return where.path();
  }

  std::string join(const std::string& dir, std::string_view name) const override {
    return (std::filesystem::path(dir) / name).string();
  }

  std::string display(const std::string& text) const override { return text; }

  std::unique_ptr<StagedFile> stage(const Location& where) const override {
    return stage_local_file(where.path());
  }

  // Regular files only: a name that now is a link, folder or device is left alone.
  void remove(const Location& where) const override {
    struct stat st;
    if (::lstat(where.path().c_str(), &st) == 0 && S_ISREG(st.st_mode))
      (void)::unlink(where.path().c_str());
  }

  void make_directory(const Location& where) const override {
    std::error_code ec;
    std::filesystem::create_directories(where.path(), ec);
    if (ec) throw_io("cannot create the directory", where.display(), ec);
  }
};

}  // namespace

const Store& local_store() noexcept {
  static const LocalStore store;
  return store;
}

}  // namespace tlio::detail
