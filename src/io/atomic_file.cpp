// io/atomic_file.cpp: output files as their stores stage them, and sets of them.
#include "io/atomic_file.hpp"

#include "io/live_files.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

AtomicFile::AtomicFile(const Location& dest) : staged_(store_of(dest).stage(dest)) {}

AtomicFile::AtomicFile(const std::filesystem::path& dest)
    : AtomicFile(Location::parse(dest.native())) {}

AtomicFile::~AtomicFile() { abort(); }

void OutputSet::add(std::unique_ptr<AtomicFile> file) {
  file->prepare();
  files_.push_back(std::move(file));
}

void OutputSet::add_text(const Location& dest, std::string_view text) {
  auto f = std::make_unique<AtomicFile>(dest);
  pwrite_all(f->fd(), 0, std::as_bytes(std::span(text)), dest.display());
  add(std::move(f));
}

void OutputSet::add_copy(const std::filesystem::path& src, const Location& dest) {
  const Fd in = open_read(src);
  const uint64_t size = fd_size(in.get(), src.string());
  auto f = std::make_unique<AtomicFile>(dest);
  copy_range(in.get(), 0, f->fd(), 0, size, dest.display());
  add(std::move(f));
}

void OutputSet::add_adopted(const std::filesystem::path& staged, const Location& dest) {
  if (!dest.is_local()) throw_invalid(dest.display() + ": only a local file can be adopted");
  add(std::make_unique<AtomicFile>(adopt_local_file(staged, dest.path())));
}

void OutputSet::commit(const std::function<void()>& then) {
  if (!files_.empty() && !files_.front()->publishes_by_rename()) {
    // An upload cannot be undone by a handler: each file goes whole, in order, signals free.
    for (auto& f : files_) f->commit();
    files_.clear();
    if (then) then();
    return;
  }
  const HeldStopSignals held;
  for (auto& f : files_) f->commit();  // on failure the rest are aborted by the destructor
  files_.clear();
  if (then) then();
}

}  // namespace tlio::detail
