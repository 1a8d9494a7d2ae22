// io/source.hpp: where the bytes of a file come from. A ByteSource is one version of one file,
// opened by its store (io/store.hpp); it says what it can do (be in memory, hand the kernel a
// descriptor, take many ranges at once) and File and Writer's copies ask it instead of
// branching on where the file lives (model directories ask the store).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tlio::detail {

/// `size` bytes at `offset` of the source go to `dst`.
struct ReadRange {
  uint64_t offset;
  std::byte* dst;
  uint64_t size;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  /// The name messages give it (a URL without its credentials).
  const std::string& name() const noexcept { return name_; }
  uint64_t size() const noexcept { return size_; }

  /// The whole source in this process's memory (a mapping, a buffer), or empty: read it.
  std::span<const std::byte> memory() const noexcept { return memory_; }
  /// True when memory() is this process's own (a private mapping, an owned buffer), so views
  /// of it may be written.
  bool memory_writable() const noexcept { return memory_writable_; }
  /// An OS file the kernel can copy from (copy_file_range), or -1.
  virtual int descriptor() const noexcept { return -1; }
  /// True for sources read by ranges from elsewhere (a server): their read_ranges takes every
  /// range in one call, merges touching ones into requests and keeps several in flight, and
  /// File reports them as Backend::http.
  virtual bool batches_ranges() const noexcept { return false; }
  /// The SHA-256 the file's store publishes for it (the Hub's X-Linked-Etag, a Hugging Face
  /// cache blob's name), lower-case hex, with `what` naming where it came from; empty when the
  /// store says nothing. Not checked by reads: tlio::hash_file compares it with the bytes.
  struct PublishedDigest {
    std::string sha256, what;
  };
  virtual PublishedDigest published_sha256() const { return {}; }

  /// Reads exactly dst.size() bytes at `offset` (the caller checked they lie in the source).
  virtual void read(uint64_t offset, std::span<std::byte> dst) const;
  /// Reads several ranges (checked by the caller). By default their bytes, laid end to end, are
  /// split evenly over up to `threads` threads (0: the configured conversion threads), each
  /// reading its stretch with read().
  virtual void read_ranges(std::span<const ReadRange> ranges, unsigned threads) const;

 protected:
  ByteSource(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  void set_memory(std::span<const std::byte> memory, bool writable) noexcept {
    memory_ = memory;
    memory_writable_ = writable;
  }

 private:
  std::string name_;
  uint64_t size_;
  std::span<const std::byte> memory_;
  bool memory_writable_ = false;
};

/// A caller's buffer, borrowed (it must outlive the source).
std::shared_ptr<const ByteSource> borrowed_memory_source(std::span<const std::byte> bytes,
                                                         std::string name);
/// A buffer the source owns (its views may be written).
std::shared_ptr<const ByteSource> owned_memory_source(std::vector<std::byte> bytes,
                                                      std::string name);

}  // namespace tlio::detail
