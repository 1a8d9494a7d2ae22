// io/direct_source.cpp: see direct_source.hpp.
#include "io/direct_source.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

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
    uint64_t window_end = std::min(
        window + (congruent && at != window ? kDirectAlign : kDirectWindow), align_up(end));
    if (congruent && at == window && window_end > end && align_down(end) > at)
      window_end = align_down(end);
    const uint64_t upto = std::min(window_end, end);
    pieces.push_back(
        {window, window_end - window, at - window, r.dst + (at - r.offset), upto - at});
    at = upto;
  }
}

// Whether piece `p` needs another read after one that returned `got` bytes and brought the
// window's bytes read to `done`. A read short of what is wanted ends the file (the rest of the
// window may lie past it): O_DIRECT reads stop only on block boundaries otherwise.
bool needs_more(const Piece& p, uint64_t done, uint64_t got, const std::string& name) {
  if (done >= p.skip + p.size) return false;
  if (got == 0 || done % kDirectAlign != 0)
    throw_io(
        fmt::format("unexpected end of file at byte {} (was the file truncated?)", p.window + done),
        name);
  return true;
}

// An io_uring of `entries` submission slots, or none (ok() false) where the kernel refuses it.
class Ring {
 public:
  explicit Ring(unsigned entries) noexcept : ok_(io_uring_queue_init(entries, &ring_, 0) == 0) {}
  ~Ring() {
    if (ok_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  bool ok() const noexcept { return ok_; }
  io_uring* get() noexcept { return &ring_; }

 private:
  io_uring ring_{};
  bool ok_;
};

// Reads the file with O_DIRECT through a second descriptor; the first (the kernel's copies,
// and every read where O_DIRECT is refused) goes through the page cache.
class DirectSource final : public ByteSource {
 public:
  DirectSource(Fd fd, uint64_t size, std::string name, DirectPath path)
      : ByteSource(std::move(name), size),
        fd_(std::move(fd)),
        direct_(path != DirectPath::page_cache ? reopen_direct(fd_.get(), O_RDONLY) : Fd()),
        path_(path) {}

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
    if (pieces.empty()) return;
    if (path_ == DirectPath::io_uring && direct_.get() < 0)
      throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt, "O_DIRECT is refused here",
                  name());
    // One piece is read on this thread: a ring for it would cost more than the read saves.
    const bool ring_wanted =
        path_ == DirectPath::io_uring ||
        (path_ == DirectPath::best && pieces.size() > 1 && io_uring_available());
    if (direct_.get() >= 0 && ring_wanted) {
      Ring ring(kDirectInFlight);
      if (ring.ok()) return read_with_ring(ring, pieces);
      if (path_ == DirectPath::io_uring)
        throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                    "io_uring is refused here", name());
    }
    read_with_threads(pieces);
  }

 private:
  // The pieces kDirectInFlight at a time through `ring`, from this thread: each slot of the
  // queue holds one piece (and its bounce buffer once one is needed) until it is read whole.
  void read_with_ring(Ring& ring, std::span<const Piece> pieces) const {
    struct Slot {
      size_t piece = 0;
      uint64_t done = 0;
      AlignedBytes bounce;
    };
    std::array<Slot, kDirectInFlight> slots;
    std::vector<unsigned> idle;
    for (unsigned k = kDirectInFlight; k-- > 0;) idle.push_back(k);
    unsigned in_flight = 0;  // prepared, submitted or not (io_uring_sq_ready counts those not yet)
    const auto submit = [&](unsigned k) {
      Slot& s = slots[k];
      const Piece& p = pieces[s.piece];
      std::byte* target = p.straight() ? p.dst : s.bounce.get();
      // Never null: the ring has a slot for each of kDirectInFlight reads.
      io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
      io_uring_prep_read(sqe, direct_.get(), target + s.done,
                         static_cast<unsigned>(p.window_size - s.done), p.window + s.done);
      io_uring_sqe_set_data64(sqe, k);
      // Straight to the kernel's workers: issued inline, an O_DIRECT read blocked the submitting
      // thread (a cold 1 GiB load took 0.82 s, median of 8, against 0.47 s this way).
      io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
      ++in_flight;
    };
    // What a completion of slot k's read means: the piece done, another read of it, or an error.
    const auto complete = [&](unsigned k, int result) {
      Slot& s = slots[k];
      const Piece& p = pieces[s.piece];
      if (result == -EINTR || result == -EAGAIN) return submit(k);
      if (result == -EINVAL && s.done == 0) {  // refused for this file after all
        pread_exact(fd_.get(), p.window + p.skip, {p.dst, static_cast<size_t>(p.size)}, name());
        return idle.push_back(k);
      }
      if (result < 0) throw_errno("read failed", name(), -result);
      s.done += static_cast<uint64_t>(result);
      if (needs_more(p, s.done, static_cast<uint64_t>(result), name())) return submit(k);
      if (!p.straight()) std::memcpy(p.dst, s.bounce.get() + p.skip, p.size);
      idle.push_back(k);
    };
    size_t next = 0;
    try {
      for (;;) {
        for (; !idle.empty() && next < pieces.size(); ++next) {
          Slot& s = slots[idle.back()];
          if (!pieces[next].straight() && !s.bounce)
            s.bounce = aligned_bytes(kDirectWindow, name());
          s.piece = next;
          s.done = 0;
          const unsigned k = idle.back();
          idle.pop_back();
          submit(k);
        }
        if (in_flight == 0) return;
        const int waited = io_uring_submit_and_wait(ring.get(), 1);
        if (waited < 0 && waited != -EINTR) throw_errno("io_uring_enter failed", name(), -waited);
        poll_interrupt();
        io_uring_cqe* cqe = nullptr;
        while (io_uring_peek_cqe(ring.get(), &cqe) == 0) {
          const auto k = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
          const int result = cqe->res;
          io_uring_cqe_seen(ring.get(), cqe);
          --in_flight;
          complete(k, result);
        }
      }
    } catch (...) {
      // The reads the kernel has write into buffers that are the caller's; those it has not
      // are dropped with the ring.
      drain(ring, in_flight - io_uring_sq_ready(ring.get()));
      throw;
    }
  }

  // Waits for `submitted` reads of the ring to finish, their results unused. Returning earlier
  // would let the kernel write into freed memory, so an error that is not a retry ends the
  // process instead (the kernel documents none for this wait).
  static void drain(Ring& ring, unsigned submitted) noexcept {
    while (submitted > 0) {
      io_uring_cqe* cqe = nullptr;
      const int got = io_uring_wait_cqe(ring.get(), &cqe);
      if (got == -EINTR || got == -EAGAIN || got == -EBUSY) continue;
      if (got < 0) std::terminate();
      io_uring_cqe_seen(ring.get(), cqe);
      --submitted;
    }
  }

  // The pieces read by up to kDirectInFlight workers, one blocking read each.
  void read_with_threads(std::span<const Piece> pieces) const {
    const unsigned workers =
        static_cast<unsigned>(std::min<size_t>(kDirectInFlight, pieces.size()));
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
    work(0);
    for (std::thread& t : helpers) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  void read_piece(const Piece& p, std::byte* bounce) const {
    const bool straight = p.straight();
    if (direct_.get() < 0) {  // the file system refused O_DIRECT: the wanted bytes only
      pread_exact(fd_.get(), p.window + p.skip, {p.dst, static_cast<size_t>(p.size)}, name());
      return;
    }
    std::byte* target = straight ? p.dst : bounce;
    for (uint64_t done = 0;;) {
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
      if (!needs_more(p, done, static_cast<uint64_t>(got), name())) break;
    }
    if (!straight) std::memcpy(p.dst, bounce + p.skip, p.size);
  }

  Fd fd_, direct_;
  DirectPath path_;
};

}  // namespace

bool io_uring_available() noexcept {
  // TLIO_IO_URING=0 turns it off (a kernel whose io_uring misbehaves; a comparison of the paths).
  // Rings that cannot read (Linux 5.1-5.5: no IORING_OP_READ, no IOSQE_ASYNC) count as refused.
  static const bool available = [] {
    const char* setting = std::getenv("TLIO_IO_URING");
    if (setting && std::string_view(setting) == "0") return false;
    io_uring_probe* probe = io_uring_get_probe();
    const bool reads = probe && io_uring_opcode_supported(probe, IORING_OP_READ);
    if (probe) io_uring_free_probe(probe);
    return reads;
  }();
  return available;
}

std::shared_ptr<const ByteSource> direct_source(Fd fd, uint64_t size, std::string name,
                                                DirectPath path) {
  return std::make_shared<DirectSource>(std::move(fd), size, std::move(name), path);
}

}  // namespace tlio::detail
