// io/direct_source.cpp: see direct_source.hpp.
#include "io/direct_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "io/interrupt.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

uint64_t align_down(uint64_t at) { return at / kDirectAlign * kDirectAlign; }
uint64_t align_up(uint64_t at) { return align_down(at + kDirectAlign - 1); }

// One read: the aligned file window [window, window + window_size), of which the `size` bytes
// from `skip` on go to `dst`. A window wholly wanted whose destination is aligned is read
// straight into it; any other through a bounce buffer.
struct Piece {
  uint64_t window, window_size, skip;
  std::byte* dst;
  uint64_t size;
  bool straight() const noexcept {
    return skip == 0 && size == window_size && reinterpret_cast<uintptr_t>(dst) % kDirectAlign == 0;
  }
};

// The pieces of one range. When the destination is congruent with the file offset (modulo the
// alignment), an unaligned head and tail are one block each through a bounce buffer and the
// rest is read straight; otherwise every window goes through one.
void add_pieces(const ReadRange& r, std::vector<Piece>& pieces) {
  const uint64_t end = r.offset + r.size;  // in the source: the caller checked
  const bool congruent = (reinterpret_cast<uintptr_t>(r.dst) - r.offset) % kDirectAlign == 0;
  for (uint64_t at = r.offset; at < end;) {
    const uint64_t window = align_down(at);
    uint64_t window_end = std::min(window + (congruent && at != window ? kDirectAlign : kDirectWindow), align_up(end));
    if (congruent && at == window && window_end > end && align_down(end) > at) window_end = align_down(end);
    const uint64_t upto = std::min(window_end, end);
    pieces.push_back({window, window_end - window, at - window, r.dst + (at - r.offset), upto - at});
    at = upto;
  }
}

// Reads the file with O_DIRECT through a second descriptor; the first (the kernel's copies,
// and every read where O_DIRECT is refused) goes through the page cache.
class DirectSource final : public ByteSource {
 public:
  DirectSource(Fd fd, uint64_t size, std::string name, bool try_direct)
      : ByteSource(std::move(name), size), fd_(std::move(fd)), direct_(try_direct ? reopen_direct(fd_.get(), O_RDONLY) : Fd()) {}

  int descriptor() const noexcept override { return fd_.get(); }

  void read(uint64_t offset, std::span<std::byte> dst) const override {
    const ReadRange range{offset, dst.data(), dst.size()};
    read_ranges({&range, 1}, 0);
  }

  // `threads` is for work on the cores; the reads in flight are the disk's queue, kDirectInFlight.
  void read_ranges(std::span<const ReadRange> ranges, unsigned) const override {
    std::vector<Piece> pieces;
    for (const ReadRange& r : ranges)
      if (r.size) add_pieces(r, pieces);
    const unsigned workers = static_cast<unsigned>(std::min<size_t>(kDirectInFlight, pieces.size()));
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::exception_ptr> errors(workers);
    auto work = [&](unsigned w) {
      try {
        AlignedBytes bounce;
        while (!failed.load(std::memory_order_relaxed)) {
          const size_t i = next.fetch_add(1);
          if (i >= pieces.size()) break;
          if (!pieces[i].straight() && !bounce) bounce = aligned_bytes(kDirectWindow, name());
          read_piece(pieces[i], bounce.get());
        }
      } catch (...) {
        errors[w] = std::current_exception();
        failed = true;
      }
    };
    std::vector<std::thread> helpers;
    try {
      for (unsigned w = 1; w < workers; ++w) helpers.emplace_back(work, w);
    } catch (const std::system_error&) {  // no more threads (a pids limit): fewer reads in flight
    }
    if (workers) work(0);
    for (std::thread& t : helpers) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  void read_piece(const Piece& p, std::byte* bounce) const {
    const bool straight = p.straight();
    if (direct_.get() < 0) {  // the file system refused O_DIRECT: the wanted bytes only
      pread_exact(fd_.get(), p.window + p.skip, {p.dst, static_cast<size_t>(p.size)}, name());
      return;
    }
    std::byte* target = straight ? p.dst : bounce;
    const uint64_t wanted = p.skip + p.size;
    for (uint64_t done = 0; done < wanted;) {
      poll_interrupt();
      const ssize_t got = ::pread(direct_.get(), target + done, p.window_size - done,
                                  static_cast<off_t>(p.window + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EINVAL && done == 0) {  // refused for this file after all
        pread_exact(fd_.get(), p.window + p.skip, {p.dst, static_cast<size_t>(p.size)}, name());
        return;
      }
      if (got < 0) throw_errno("read failed", name(), errno);
      done += static_cast<uint64_t>(got);
      // A read short of what is wanted ends the file (the rest of the window may lie past it).
      if (done < wanted && (got == 0 || done % kDirectAlign != 0))
        throw_io(fmt::format("unexpected end of file at byte {} (was the file truncated?)", p.window + done),
                 name());
    }
    if (!straight) std::memcpy(p.dst, bounce + p.skip, p.size);
  }

  Fd fd_, direct_;
};

}  // namespace

std::shared_ptr<const ByteSource> direct_source(Fd fd, uint64_t size, std::string name, bool try_direct) {
  return std::make_shared<DirectSource>(std::move(fd), size, std::move(name), try_direct);
}

}  // namespace tlio::detail
