// io/store.cpp: the stores tlio knows, by URL scheme. A new kind of location registers here.
#include "io/store.hpp"

#include <fcntl.h>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>
#include <vector>

#include "io/interrupt.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

// Defined by each store's own file.
const Store& local_store() noexcept;
const Store& http_store() noexcept;
const Store& s3_store() noexcept;
const Store& gs_store() noexcept;
const Store& hf_store() noexcept;
const Store& stdio_store() noexcept;

namespace {
struct Registration {
  std::string_view scheme;
  const Store& (*store)() noexcept;
};
// "" is a local path, kStandardStream standard input and output.
constexpr std::array kStores = {
    Registration{"", local_store},    Registration{kStandardStream, stdio_store},
    Registration{"http", http_store}, Registration{"https", http_store},
    Registration{"s3", s3_store},     Registration{"gs", gs_store},
    Registration{"hf", hf_store},
};
}  // namespace

std::unique_ptr<StagedFile> Store::stage(const Location& where) const {
  throw Error(
      ErrorCode::unsupported, Rule::none, {}, std::nullopt,
      fmt::format("{}:// locations cannot be written (outputs go to local paths, s3:// and gs://)",
                  where.scheme()),
      where.display());
}

void Store::remove(const Location& where) const {
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              fmt::format("files at {}:// locations cannot be removed", where.scheme()),
              where.display());
}

void Store::make_directory(const Location&) const {}

const Store* find_store(std::string_view scheme) noexcept {
  for (const Registration& r : kStores)
    if (r.scheme == scheme) return &r.store();
  return nullptr;
}

const Store& store_of(const Location& where) noexcept { return *find_store(where.scheme()); }

std::string join_key(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (!out.ends_with('/')) out += '/';
  out += name;
  return out;
}

Fd open_whole_file(const Location& where, const SourceOptions& options) {
  SourceOptions o = options;
  o.access = SourceOptions::Access::read;
  const std::shared_ptr<const ByteSource> src = open_source(where, o);
  // A local file (or standard input, spooled) is its own descriptor already.
  if (src->descriptor() >= 0) {
    const int fd = ::fcntl(src->descriptor(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw_errno("cannot duplicate the descriptor", where.display(), errno);
    return Fd(fd);
  }
  Fd fd = unnamed_temp_file(where.display());
  // In pieces of kDownloadPiece: each is fetched over several connections at once.
  constexpr uint64_t kDownloadPiece = uint64_t{64} << 20;
  std::vector<std::byte> buf(static_cast<size_t>(std::min(src->size(), kDownloadPiece)));
  for (uint64_t at = 0; at < src->size(); at += buf.size()) {
    poll_interrupt();
    const std::span<std::byte> piece(
        buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), src->size() - at)));
    const ReadRange r{at, piece.data(), piece.size()};
    src->read_ranges({&r, 1}, 0);
    pwrite_all(fd.get(), at, piece, where.display());
  }
  return fd;
}

}  // namespace tlio::detail
