// io/output_writes.cpp: see output_writes.hpp.
#include "io/output_writes.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "io/interrupt.hpp"

namespace tlio::detail {
namespace {

// O_DIRECT's alignment of offsets, sizes and buffers.
constexpr uint64_t kBlock = kDirectAlign;
// Pieces this large written through the page cache start their writeback at once.
constexpr size_t kWritebackFrom = size_t{4} << 20;

// [data, data + size), whole blocks, at `at` through O_DIRECT descriptor `fd`; false where the
// file system refuses it before anything was written.
bool direct_write(int fd, const std::byte* data, size_t size, uint64_t at,
                  const std::string& name) {
  for (size_t done = 0; done < size;) {
    poll_interrupt();
    const ssize_t put = ::pwrite(fd, data + done, size - done, static_cast<off_t>(at + done));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EINVAL && done == 0) return false;
    if (put <= 0) throw_errno("write failed", name, put < 0 ? errno : EIO);
    done += static_cast<size_t>(put);
    if (done % kBlock != 0) throw_errno("write failed (a partial block)", name, EIO);
  }
  return true;
}

}  // namespace

OutputWrites::OutputWrites(int fd, std::string name, bool lands_on_disk)
    : fd_(fd),
      name_(std::move(name)),
      lands_on_disk_(lands_on_disk),
      direct_(lands_on_disk ? reopen_direct(fd, O_WRONLY) : Fd()) {}

OutputWrites::~OutputWrites() {
  // The write in flight reads spare_: it ends before the buffers go (its error already moot).
  if (in_flight_.valid()) in_flight_.wait();
}

void OutputWrites::wait() {
  if (in_flight_.valid()) in_flight_.get();
}

void OutputWrites::buffered(uint64_t offset, std::span<const std::byte> bytes) {
  pwrite_all(fd_, offset, bytes, name_);
  if (lands_on_disk_ && bytes.size() >= kWritebackFrom) start_writeback(fd_, offset, bytes.size());
}

void OutputWrites::copy_from(int in_fd, uint64_t in_offset, uint64_t offset, uint64_t length) {
  end_run();
  copy_range(in_fd, in_offset, fd_, offset, length, name_);
  if (lands_on_disk_ && length >= kWritebackFrom) start_writeback(fd_, offset, length);
}

void OutputWrites::write_blocks(size_t size) {
  wait();  // in order: the stage before first
  if (!direct_write(direct_.get(), stage_.get(), size, base_, name_)) {
    direct_ = Fd();  // refused after all: the page cache from now on
    buffered(base_, {stage_.get(), size});
    return;
  }
  proven_ = true;
}

void OutputWrites::write_stage() {
  if (!proven_) return write_blocks(kStageBytes);
  wait();
  if (!spare_) spare_ = aligned_bytes(kStageBytes, name_);
  std::swap(stage_, spare_);
  try {
    in_flight_ = std::async(std::launch::async, [this, at = base_] {
      if (!direct_write(direct_.get(), spare_.get(), kStageBytes, at, name_))
        throw_errno("write failed (O_DIRECT refused after it was taken)", name_, EINVAL);
    });
  } catch (const std::system_error&) {  // no thread to be had: written here and now
    std::swap(stage_, spare_);
    write_blocks(kStageBytes);
  }
}

void OutputWrites::flush() {
  wait();
  if (!in_run_ || staged_ == 0) return;
  const size_t whole = staged_ / kBlock * kBlock;
  if (whole > 0) write_blocks(whole);
  // The partial block through the page cache, and kept: if the run goes on, the block is written
  // again whole (the kernel writes the cached page out before a direct write covers it).
  buffered(base_ + whole, {stage_.get() + whole, staged_ - whole});
  if (!direct()) {
    in_run_ = false;
    return;
  }
  std::memmove(stage_.get(), stage_.get() + whole, staged_ - whole);
  base_ += whole;
  staged_ -= whole;
}

void OutputWrites::end_run() {
  flush();
  in_run_ = false;
}

void OutputWrites::write(uint64_t offset, std::span<const std::byte> bytes) {
  if (in_run_ && offset != base_ + staged_) end_run();
  while (!bytes.empty()) {
    if (!direct()) return buffered(offset, bytes);
    if (!in_run_) {
      // A run starts on a block boundary, past the small-file range; the bytes before, buffered.
      const uint64_t start = std::max(kDirectFrom, (offset + kBlock - 1) / kBlock * kBlock);
      if (offset < start) {
        const size_t head = static_cast<size_t>(std::min<uint64_t>(bytes.size(), start - offset));
        buffered(offset, bytes.first(head));
        offset += head;
        bytes = bytes.subspan(head);
        continue;
      }
      if (!stage_) stage_ = aligned_bytes(kStageBytes, name_);
      in_run_ = true;
      base_ = offset;
      staged_ = 0;
    }
    const size_t take = std::min(bytes.size(), kStageBytes - staged_);
    std::memcpy(stage_.get() + staged_, bytes.data(), take);
    staged_ += take;
    offset += take;
    bytes = bytes.subspan(take);
    if (staged_ == kStageBytes) {
      write_stage();
      if (!direct()) {  // written buffered whole
        in_run_ = false;
        continue;
      }
      base_ += kStageBytes;
      staged_ = 0;
    }
  }
}

}  // namespace tlio::detail
