// io/output_writes.hpp: how an output file's bytes are written. The bulk of one that lands on
// disk goes past the page cache: copying gigabytes into the cache and reclaiming it costs more
// system time than the disk takes (2 GiB on a 2-core VM: 0.5-5 s of system time, 0.1 s with
// O_DIRECT; docs/benchmarks.md), and an output is not read back soon.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>

#include "io/os_file.hpp"

namespace tlio::detail {

/// The writes of one output file at any offsets. In a file that lands on disk, from kDirectFrom
/// on, a run of writes each continuing the one before is gathered into whole blocks written with
/// O_DIRECT through a second descriptor on the same file; any other write, and a run's last
/// partial block, goes through the page cache (its writeback started at once when large). Where
/// the file system refuses O_DIRECT, every write goes through the page cache. A direct write
/// waits for the disk, so after the first (which shows whether the file system takes them) each
/// full stage is written by a thread of its own while the caller fills a second one: making the
/// bytes and writing them overlap (where no thread can be started, the stage is written at
/// once). An error of that write is thrown by the next call that waits for it (the next full
/// stage, flush, copy_from, end of a run); there, unlike on the first write, O_DIRECT refused
/// is an error too (it was taken before, with the same alignment). Not thread-safe.
class OutputWrites {
 public:
  /// Offsets below this are always written through the page cache (a small file never leaves it).
  static constexpr uint64_t kDirectFrom = uint64_t{8} << 20;
  /// Bytes gathered before a direct write.
  static constexpr size_t kStageBytes = size_t{8} << 20;

  /// fd: the file, open for writing; `name` for messages. `lands_on_disk` false (a staging copy
  /// read back for an upload or standard output): every write through the page cache.
  OutputWrites(int fd, std::string name, bool lands_on_disk);
  OutputWrites(const OutputWrites&) = delete;
  OutputWrites& operator=(const OutputWrites&) = delete;
  ~OutputWrites();

  /// Writes `bytes` at `offset` (Error{io} on failure, disk full included). A write that does not
  /// continue the run writes out what was gathered first, so writes land in the order given.
  void write(uint64_t offset, std::span<const std::byte> bytes);
  /// Writes out what was gathered: the file's bytes are all there, for fsync or another
  /// descriptor's writes. A later write continuing the run is still gathered.
  void flush();
  /// Copies `length` bytes of another file at `in_offset` to `offset` (copy_range: in the
  /// kernel where it can), what was gathered written out first.
  void copy_from(int in_fd, uint64_t in_offset, uint64_t offset, uint64_t length);
  /// False once the file system has refused O_DIRECT, or for a file that does not land on disk.
  bool direct() const noexcept { return direct_.get() >= 0; }

 private:
  void buffered(uint64_t offset, std::span<const std::byte> bytes);
  void write_blocks(size_t size);  // stage_[0, size), a multiple of the block, at base_
  void write_stage();              // the full stage_ at base_, in the background once proven
  void wait();                     // for the write in flight; its error thrown here
  void end_run();

  int fd_;
  std::string name_;
  bool lands_on_disk_;
  Fd direct_;
  AlignedBytes stage_, spare_;  // spare_: the stage being written in the background
  std::future<void> in_flight_;
  bool proven_ = false;  // a direct write went through
  bool in_run_ = false;  // stage_ holds the file's bytes [base_, base_ + staged_)
  uint64_t base_ = 0;
  size_t staged_ = 0;
};

}  // namespace tlio::detail
