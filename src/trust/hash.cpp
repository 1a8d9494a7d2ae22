// trust/hash.cpp: SHA-256 of files read front to back (tlio/trust.hpp). A local file is hashed
// from a mapping (no copy); a remote one's next piece is fetched while the current one is
// hashed, so it costs about the longer of its download and its hash. Several files go to
// several threads.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/parallel.hpp"
#include "format/file_access.hpp"
#include "io/digest.hpp"
#include "io/interrupt.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "trust/folder_walk.hpp"
#include "tlio/trust.hpp"

namespace tlio {
namespace {

using detail::ByteSource;

// Pieces hashed at once: a local file's in 8 MiB steps of read-ahead; a remote one's large
// enough to keep the source's parallel ranged requests busy.
constexpr uint64_t kLocalPiece = uint64_t{8} << 20;
constexpr uint64_t kRemotePiece = uint64_t{32} << 20;
constexpr size_t kPipePiece = size_t{1} << 20;

void read_piece(const ByteSource& source, uint64_t offset, std::span<std::byte> dst) {
  if (source.batches_ranges()) {
    const detail::ReadRange range{offset, dst.data(), dst.size()};
    source.read_ranges({&range, 1}, 1);
  } else {
    source.read(offset, dst);
  }
}

// Asked between pieces: `poll`, the calling thread's InterruptScope; `stop`, set from any
// thread (the caller's interrupt while other threads hash).
FileHash hash_source(const ByteSource& source, bool poll, const std::atomic<bool>* stop) {
  detail::Sha256 sha;
  const uint64_t size = source.size();
  const auto stopped = [&] {
    if (poll) detail::poll_interrupt();
    if (stop && stop->load(std::memory_order_relaxed)) detail::throw_interrupted();
  };
  if (const int fd = source.descriptor(); fd >= 0 && size > 0) {
    // A local file, hashed straight from the page cache through a mapping of its own: a copy
    // into a buffer costs as much CPU as the hash on a machine with SHA-NI. Each piece asks the
    // kernel to read the next one ahead (a cold file streams) and leaves this process's memory
    // once hashed.
    const detail::Mapping mapping(fd, size, source.name());
    const std::span<const std::byte> all = mapping.bytes();
    (void)madvise(const_cast<std::byte*>(all.data()), all.size(), MADV_SEQUENTIAL);
    for (uint64_t at = 0; at < size; at += kLocalPiece) {
      stopped();
      const std::span<const std::byte> piece = all.subspan(at, std::min(kLocalPiece, size - at));
      if (at + piece.size() < size) {
        const std::span<const std::byte> next = all.subspan(at + piece.size(), std::min(kLocalPiece, size - at - piece.size()));
        (void)madvise(const_cast<std::byte*>(next.data()), next.size(), MADV_WILLNEED);
      }
      sha.update(piece);
      detail::drop_pages(piece);
    }
  } else if (!source.memory().empty()) {
    // A buffer in memory (bytes given to File::from_bytes, standard input's copy).
    const std::span<const std::byte> all = source.memory();
    for (uint64_t at = 0; at < size; at += kLocalPiece) {
      stopped();
      sha.update(all.subspan(at, std::min(kLocalPiece, size - at)));
    }
  } else {
    const uint64_t piece = source.batches_ranges() ? kRemotePiece : kLocalPiece;
    const uint64_t buffer = std::min(piece, size);
    std::vector<std::byte> a(buffer), b(buffer);
    std::span<std::byte> current(a), next(b);
    uint64_t at = 0, n = std::min(piece, size);
    if (n) read_piece(source, 0, current.first(n));
    while (n) {
      stopped();
      const uint64_t following = at + n, m = std::min(piece, size - following);
      std::future<void> ahead;
      if (m) ahead = std::async(std::launch::async, [&, following, m] { read_piece(source, following, next.first(m)); });
      try {
        sha.update(current.first(n));
      } catch (...) {
        if (ahead.valid()) ahead.wait();
        throw;
      }
      if (ahead.valid()) ahead.get();
      std::swap(current, next);
      at = following;
      n = m;
    }
  }
  const detail::Sha256Digest digest = sha.finish();
  FileHash out{source.name(), size, detail::to_hex(digest), {}};
  const ByteSource::PublishedDigest published = source.published_sha256();
  if (!published.sha256.empty()) {
    if (published.sha256 != out.sha256)
      throw Error(ErrorCode::verification, Rule::none, {}, std::nullopt,
                  fmt::format("its bytes have SHA-256 {}, but {} says {}", out.sha256, published.what, published.sha256),
                  source.name());
    out.checked_against = published.what;
  }
  return out;
}

// A pipe named by a path (a shell's <(...), a FIFO): read to its end, as sha256sum reads one.
FileHash hash_pipe(const std::string& path, bool poll, const std::atomic<bool>* stop) {
  const detail::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) detail::throw_errno("cannot open it", path, errno);
  detail::Sha256 sha;
  std::vector<std::byte> buffer(kPipePiece);
  uint64_t size = 0;
  for (size_t n = buffer.size(); n == buffer.size(); size += n) {
    if (poll) detail::poll_interrupt();
    if (stop && stop->load(std::memory_order_relaxed)) detail::throw_interrupted();
    n = detail::read_stream(fd.get(), buffer, path);
    sha.update(std::span(buffer).first(n));
  }
  return {path, size, detail::to_hex(sha.finish()), {}};
}

FileHash hash_location(const std::string& location, const OpenOptions& open, bool poll,
                       const std::atomic<bool>* stop) {
  const detail::Location where = detail::Location::parse(location);
  struct stat st {};
  if (where.is_local() && ::stat(where.text().c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
    return hash_pipe(where.text(), poll, stop);
  detail::SourceOptions o;
  o.access = detail::SourceOptions::Access::read;  // a descriptor: hashed from a mapping of our own
  o.token = open.token;
  o.warning = open.warning;
  return hash_source(*detail::open_source(where, o), poll, stop);
}

}  // namespace

FileHash hash_file(const std::string& location, const HashOptions& options) {
  detail::poll_interrupt();
  return hash_location(location, options.open, true, nullptr);
}

FileHash hash_file(const File& file) { return hash_source(detail::FileAccess::source(file), true, nullptr); }

FileHash check_sha256(const File& file, std::string_view sha256) {
  if (sha256.size() != 64 || !std::all_of(sha256.begin(), sha256.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }))
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                fmt::format("\"{}\" is not a SHA-256 (64 hexadecimal digits)", sha256.substr(0, 80)));
  const FileHash h = hash_file(file);
  std::string wanted(sha256);
  std::transform(wanted.begin(), wanted.end(), wanted.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (h.sha256 != wanted)
    throw Error(ErrorCode::verification, Rule::none, {}, std::nullopt,
                fmt::format("its bytes have SHA-256 {}, not the expected {}", h.sha256, wanted), file.name());
  return h;
}

void hash_files(std::span<const std::string> locations, const HashOptions& options,
                const std::function<void(size_t, const FileHash&, const Error*)>& done) {
  const size_t count = locations.size();
  std::vector<std::optional<FileHash>> hashes(count);
  std::vector<std::optional<Error>> errors(count);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex reported;
  size_t reported_up_to = 0;  // results handed to `done`, under `reported`
  std::vector<char> finished(count, 0);

  // Hands over every finished result after the last one handed over, in order. The caller's
  // thread takes this too, so `done` may run on any of them (one at a time).
  const auto report = [&] {
    const std::lock_guard lock(reported);
    while (reported_up_to < count && finished[reported_up_to]) {
      const size_t i = reported_up_to++;
      if (errors[i]) done(i, FileHash{}, &*errors[i]);
      else done(i, *hashes[i], nullptr);
    }
  };
  const auto work = [&](bool caller) {
    try {
      for (size_t i; !stop.load() && (i = next.fetch_add(1)) < count;) {
        if (caller) detail::poll_interrupt();
        try {
          hashes[i] = hash_location(locations[i], options.open, caller, &stop);
        } catch (const Error& e) {
          if (e.code() == ErrorCode::interrupted) throw;
          errors[i] = e;
        }
        {
          const std::lock_guard lock(reported);
          finished[i] = 1;
        }
        report();
      }
    } catch (...) {
      stop.store(true);
      throw;
    }
  };
  const unsigned threads = static_cast<unsigned>(std::min<size_t>(detail::thread_count(options.threads), count));
  std::vector<std::thread> helpers;
  std::vector<std::exception_ptr> helper_errors(threads);
  for (unsigned t = 1; t < threads; ++t)
    helpers.emplace_back([&, t] {
      try {
        work(false);
      } catch (...) {
        helper_errors[t] = std::current_exception();
      }
    });
  std::exception_ptr mine;
  try {
    work(true);
  } catch (...) {
    mine = std::current_exception();
    stop.store(true);
  }
  for (auto& h : helpers) h.join();
  if (mine) std::rethrow_exception(mine);
  for (auto& e : helper_errors)
    if (e) std::rethrow_exception(e);
}

std::vector<std::string> folder_files(const std::string& folder, bool follow_file_links) {
  return detail::walk_folder(folder, follow_file_links, [](const std::string& rel) { return rel == ".git"; });
}

namespace detail {

bool path_order(std::string_view a, std::string_view b) noexcept {
  while (true) {
    const size_t ea = std::min(a.find('/'), a.size()), eb = std::min(b.find('/'), b.size());
    if (const int c = a.substr(0, ea).compare(b.substr(0, eb)); c != 0) return c < 0;
    if (ea == a.size() || eb == b.size()) return ea == a.size() && eb != b.size();  // a prefix first
    a.remove_prefix(ea + 1);
    b.remove_prefix(eb + 1);
  }
}

std::vector<std::string> walk_folder(const std::string& folder, bool follow_file_links,
                                     const std::function<bool(const std::string&)>& skip) {
  namespace fs = std::filesystem;
  const fs::path root(folder);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) throw_errno("cannot list it", folder, errno);
  if (!S_ISDIR(st.st_mode)) throw_errno("cannot list it", folder, ENOTDIR);
  std::error_code ec;
  std::vector<std::string> names;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) throw_errno("cannot list it", folder, ec.value());
  for (; it != end; it.increment(ec)) {
    if (ec) throw_errno("cannot list it", folder, ec.value());
    const fs::directory_entry& entry = *it;
    const std::string rel = entry.path().lexically_relative(root).generic_string();
    const fs::file_status link = entry.symlink_status(ec);
    if (ec) throw_errno("cannot look at it", entry.path().string(), ec.value());
    if (skip(rel)) {
      if (fs::is_directory(link)) it.disable_recursion_pending();
      continue;
    }
    if (fs::is_directory(link)) continue;
    if (fs::is_regular_file(link)) {
      names.push_back(rel);
      continue;
    }
    const bool to_file = fs::is_symlink(link) && fs::is_regular_file(entry.status(ec));
    if (to_file && follow_file_links) {
      names.push_back(rel);
      continue;
    }
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fs::is_symlink(link) ? (to_file ? "is a symbolic link, which a model signature does not follow"
                                                : "is a symbolic link to something that is not a regular file")
                                     : "is not a regular file (a FIFO, socket or device)",
                entry.path().string());
  }
  std::sort(names.begin(), names.end(), path_order);
  return names;
}

}  // namespace detail
}  // namespace tlio
