// trust/hash.cpp: SHA-256 of files read front to back (tlio/trust.hpp). A local file is hashed
// from a mapping (no copy); a remote one's next piece is fetched while the current one is
// hashed, so it costs about the longer of its download and its hash. Several files go to
// several threads.
#include "trust/hash.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>
#include <vector>

#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "common/text.hpp"
#include "format/file_access.hpp"
#include "io/digest.hpp"
#include "io/folder_walk.hpp"
#include "io/interrupt.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/trust.hpp"

namespace tlio {
namespace {

using detail::ByteSource;

// Pieces hashed at once: a local file's in 8 MiB steps of read-ahead; a remote one's large
// enough to keep the source's parallel ranged requests busy; a stream's (a pipe) small.
constexpr uint64_t kLocalPiece = uint64_t{8} << 20;
constexpr uint64_t kRemotePiece = uint64_t{32} << 20;
constexpr size_t kStreamPiece = size_t{1} << 20;
// Remote files hashed at once by hash_files: each holds two pieces and keeps its source's
// connections busy, so more would add memory (64 MiB each) and no speed.
constexpr std::ptrdiff_t kMaxRemoteAtOnce = 4;

// Asked between pieces: the calling thread's InterruptScope (`poll`: only on that thread) and
// a flag other threads set (a stop seen by the caller while they hash).
struct StopCheck {
  bool poll = true;
  const std::atomic<bool>* stop = nullptr;
  void operator()() const {
    if (poll) detail::poll_interrupt();
    if (stop && stop->load(std::memory_order_relaxed)) detail::throw_interrupted();
  }
};

// Bytes in memory, piece by piece, the next asked ahead of the hash (a cold mapped file
// streams); with `drop`, each hashed piece leaves this process (a mapping of our own).
void hash_memory(std::span<const std::byte> all, bool drop, detail::Sha256& sha,
                 const StopCheck& stopped) {
  for (uint64_t at = 0; at < all.size(); at += kLocalPiece) {
    stopped();
    const std::span<const std::byte> piece =
        all.subspan(at, std::min<uint64_t>(kLocalPiece, all.size() - at));
    if (const uint64_t next = at + piece.size(); next < all.size())
      (void)madvise(const_cast<std::byte*>(all.data() + next),
                    std::min<uint64_t>(kLocalPiece, all.size() - next), MADV_WILLNEED);
    sha.update(piece);
    if (drop) detail::drop_pages(piece);
  }
}

void read_piece(const ByteSource& source, uint64_t offset, std::span<std::byte> dst) {
  if (source.batches_ranges()) {
    const detail::ReadRange range{offset, dst.data(), dst.size()};
    source.read_ranges({&range, 1}, 1);
  } else {
    source.read(offset, dst);  // positional reads: a file that shrinks is Error{io}
  }
}

// Read into two buffers: the next piece arrives while the current one is hashed.
void hash_reads(const ByteSource& source, detail::Sha256& sha, const StopCheck& stopped) {
  const uint64_t size = source.size(), piece = source.batches_ranges() ? kRemotePiece : kLocalPiece;
  std::vector<std::byte> a(std::min(piece, size)), b(a.size());
  std::span<std::byte> current(a), next(b);
  uint64_t at = 0, n = std::min(piece, size);
  if (n) read_piece(source, 0, current.first(n));
  while (n) {
    stopped();
    const uint64_t following = at + n, m = std::min(piece, size - following);
    std::future<void> ahead;
    if (m)
      ahead = std::async(std::launch::async,
                         [&, following, m] { read_piece(source, following, next.first(m)); });
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

// A stream read to its end (a pipe, a /proc file whose size says 0); the bytes hashed.
uint64_t hash_stream(int fd, const std::string& name, detail::Sha256& sha,
                     const StopCheck& stopped) {
  std::vector<std::byte> buffer(kStreamPiece);
  uint64_t size = 0;
  for (size_t n = buffer.size(); n == buffer.size(); size += n) {
    stopped();
    n = detail::read_stream(fd, buffer, name);
    sha.update(std::span(buffer).first(n));
  }
  return size;
}

FileHash finish(const std::string& name, uint64_t size, detail::Sha256& sha,
                const ByteSource::PublishedDigest& published) {
  FileHash out{name, size, detail::to_hex(sha.finish()), {}};
  if (!published.sha256.empty()) {
    if (published.sha256 != out.sha256)
      throw Error(ErrorCode::verification, Rule::none, {}, std::nullopt,
                  fmt::format("its bytes have SHA-256 {}, but {} says {}", out.sha256,
                              published.what, published.sha256),
                  name);
    out.checked_against = published.what;
  }
  return out;
}

// `map`: a descriptor is hashed through a mapping of our own (no copy; a file that shrinks
// meanwhile raises SIGBUS, as with Backend::mmap), else with positional reads.
FileHash hash_source(const ByteSource& source, bool map, const StopCheck& stopped) {
  detail::Sha256 sha;
  if (!source.memory().empty()) {
    hash_memory(source.memory(), false, sha, stopped);  // a File's own mapping or buffer
  } else if (const int fd = source.descriptor(); map && fd >= 0 && source.size() > 0) {
    const detail::Mapping mapping(fd, source.size(), source.name());
    (void)madvise(const_cast<std::byte*>(mapping.bytes().data()), mapping.bytes().size(),
                  MADV_SEQUENTIAL);
    hash_memory(mapping.bytes(), true, sha, stopped);
  } else {
    hash_reads(source, sha, stopped);
  }
  return finish(source.name(), source.size(), sha, source.published_sha256());
}

[[noreturn]] void not_a_file(const std::string& name) {
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              "is not a regular file (a FIFO, socket or device)", name);
}

// A local path, opened once and looked at through its descriptor (no check-then-open race): a
// regular file; one whose size says 0 (a /proc file) read to its end; with `pipes`, a FIFO
// (a shell's <(...)) read to its end as sha256sum reads one; anything else refused.
FileHash hash_local(const std::string& path, const OpenOptions& open, bool pipes,
                    const StopCheck& stopped) {
  detail::Fd fd(
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO must not block here
  if (fd.get() < 0) detail::throw_errno("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) detail::throw_errno("cannot look at it", path, errno);
  if (S_ISDIR(st.st_mode)) detail::throw_errno("cannot hash it", path, EISDIR);
  detail::Sha256 sha;
  if (S_ISFIFO(st.st_mode)) {
    if (!pipes) not_a_file(path);
    const detail::Fd blocking(::open(path.c_str(), O_RDONLY | O_CLOEXEC));  // waits for a writer
    if (blocking.get() < 0) detail::throw_errno("cannot open", path, errno);
    const uint64_t size = hash_stream(blocking.get(), path, sha, stopped);
    return finish(path, size, sha, {});
  }
  if (!S_ISREG(st.st_mode)) not_a_file(path);
  if (::fcntl(fd.get(), F_SETFL, 0) != 0) detail::throw_errno("cannot read it", path, errno);
  if (st.st_size == 0) {
    const uint64_t size = hash_stream(fd.get(), path, sha, stopped);
    return finish(path, size, sha, {});
  }
  const bool direct = open.backend == Backend::direct;
  const auto source = detail::descriptor_source(
      std::move(fd), path,
      direct ? detail::SourceOptions::Access::direct : detail::SourceOptions::Access::read);
  return hash_source(*source, open.backend != Backend::pread && !direct, stopped);
}

FileHash hash_location(const detail::Location& where, const OpenOptions& open, bool pipes,
                       const StopCheck& stopped) {
  if (const auto node = detail::store_of(where).local_node(where))
    return hash_local(node->string(), open, pipes, stopped);
  detail::SourceOptions o;
  o.token = open.token;
  o.warning = open.warning;
  return hash_source(*detail::open_source(where, o), false, stopped);
}

}  // namespace

FileHash hash_file(const std::string& location, const HashOptions& options) {
  return hash_location(detail::Location::parse(location), options.open, true, StopCheck{});
}

FileHash hash_file(const File& file) {
  return hash_source(detail::FileAccess::source(file), false, StopCheck{});
}

FileHash check_sha256(const File& file, std::string_view sha256) {
  if (!detail::is_sha256_hex(sha256))
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                fmt::format("{} is not a SHA-256 (64 hexadecimal digits)",
                            detail::quote_name(sha256.substr(0, 80))));
  const FileHash h = hash_file(file);
  if (const std::string wanted = detail::ascii_lower(sha256); h.sha256 != wanted)
    throw Error(ErrorCode::verification, Rule::none, {}, std::nullopt,
                fmt::format("its bytes have SHA-256 {}, not the expected {}", h.sha256, wanted),
                file.name());
  return h;
}

namespace detail {

void hash_many(std::span<const std::string> locations, const HashOptions& options, bool pipes,
               const std::function<void(size_t, const FileHash&, const Error*)>& done) {
  const size_t count = locations.size();
  std::vector<std::optional<FileHash>> hashes(count);
  std::vector<std::optional<Error>> errors(count);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::counting_semaphore<kMaxRemoteAtOnce> remote_slots(kMaxRemoteAtOnce);
  std::mutex reported;
  size_t reported_up_to = 0;  // results handed to `done`, under `reported`
  std::vector<char> finished(count, 0);

  // Hands over every finished result after the last one handed over, in order. Any thread may
  // get here, so `done` runs on any of them (one at a time).
  const auto report = [&] {
    const std::lock_guard lock(reported);
    while (reported_up_to < count && finished[reported_up_to]) {
      const size_t i = reported_up_to++;
      if (errors[i])
        done(i, FileHash{}, &*errors[i]);
      else
        done(i, *hashes[i], nullptr);
    }
  };
  const auto one = [&](size_t i, const StopCheck& stopped) {
    const Location where = Location::parse(locations[i]);
    const bool remote =
        !store_of(where).local_node(where);  // transfers are limited, local reads not
    if (remote)
      while (!remote_slots.try_acquire_for(std::chrono::milliseconds(20))) stopped();
    const struct Slot {
      std::counting_semaphore<kMaxRemoteAtOnce>* slots;
      ~Slot() {
        if (slots) slots->release();
      }
    } slot{remote ? &remote_slots : nullptr};
    return hash_location(where, options.open, pipes, stopped);
  };
  // The caller's thread polls its InterruptScope; the others see `stop`.
  const auto work = [&](bool caller) {
    const StopCheck stopped{caller, &stop};
    try {
      for (size_t i; !stop.load() && (i = next.fetch_add(1)) < count;) {
        try {
          hashes[i] = one(i, stopped);
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
  const unsigned threads =
      static_cast<unsigned>(std::min<size_t>(thread_count(options.threads), count));
  std::vector<std::thread> helpers;
  std::vector<std::exception_ptr> helper_errors(threads);
  std::atomic<unsigned> running{0};
  const auto join_all = [&] {
    for (auto& h : helpers) h.join();
  };
  try {
    for (unsigned t = 1; t < threads; ++t) {
      running.fetch_add(1);
      try {
        helpers.emplace_back([&, t] {
          try {
            work(false);
          } catch (...) {
            helper_errors[t] = std::current_exception();
          }
          running.fetch_sub(1);
        });
      } catch (...) {
        running.fetch_sub(1);
        throw;
      }
    }
  } catch (...) {  // a thread that could not start: the others stop, then the error goes up
    stop.store(true);
    join_all();
    throw;
  }
  std::exception_ptr mine;
  try {
    work(true);
    // The caller's files are done: it keeps asking its InterruptScope while the others finish.
    while (running.load() > 0) {
      poll_interrupt();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (...) {
    mine = std::current_exception();
    stop.store(true);
  }
  join_all();
  if (mine) std::rethrow_exception(mine);
  for (auto& e : helper_errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace detail

void hash_files(std::span<const std::string> locations, const HashOptions& options,
                const std::function<void(size_t, const FileHash&, const Error*)>& done) {
  detail::hash_many(locations, options, true, done);
}

std::vector<std::string> folder_files(const std::string& folder, bool follow_file_links) {
  return detail::walk_folder(folder, follow_file_links,
                             [](const std::string& rel) { return rel == ".git"; });
}

std::vector<std::string> folder_files(const std::string& folder, bool follow_file_links,
                                      std::vector<SkippedEntry>& skipped) {
  return detail::walk_folder(
      folder, follow_file_links, [](const std::string& rel) { return rel == ".git"; }, &skipped);
}

namespace detail {

bool path_order(std::string_view a, std::string_view b) noexcept {
  while (true) {
    const size_t ea = std::min(a.find('/'), a.size()), eb = std::min(b.find('/'), b.size());
    if (const int c = a.substr(0, ea).compare(b.substr(0, eb)); c != 0) return c < 0;
    if (ea == a.size() || eb == b.size())
      return ea == a.size() && eb != b.size();  // a prefix first
    a.remove_prefix(ea + 1);
    b.remove_prefix(eb + 1);
  }
}

std::string shown_name(std::string_view name) {
  const bool plain = !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  return plain ? std::string(name) : quote_name(name);
}

std::vector<std::string> walk_folder(const std::string& folder, bool follow_file_links,
                                     const std::function<bool(const std::string&)>& skip,
                                     std::vector<SkippedEntry>* refused) {
  using Kind = FolderEntry::Kind;
  std::vector<std::string> names;
  walk_local_folder(folder, false, [&](const FolderEntry& e) {
    if (skip(e.rel)) return false;
    if (e.kind == Kind::folder) {
      // Passed over and named, rather than one unreadable folder ending the whole walk.
      if (!refused || ::access((std::filesystem::path(folder) / e.rel).c_str(), R_OK | X_OK) == 0)
        return true;
      refused->push_back(
          {e.rel, fmt::format("cannot be read ({})", std::generic_category().message(errno))});
      return false;
    }
    if (e.kind == Kind::file || (e.kind == Kind::link_to_file && follow_file_links)) {
      names.push_back(e.rel);
      return true;
    }
    const char* why =
        e.kind == Kind::link_to_file ? "is a symbolic link, which a model signature does not follow"
        : e.kind == Kind::other_link ? "is a symbolic link to something that is not a regular file"
                                     : "is not a regular file (a FIFO, socket or device)";
    const std::string path = (std::filesystem::path(folder) / e.rel).string();
    if (!refused) throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt, why, path);
    refused->push_back({e.rel, why});
    return true;
  });
  std::sort(names.begin(), names.end(), path_order);
  return names;
}

}  // namespace detail
}  // namespace tlio
