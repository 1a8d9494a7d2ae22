// io/source.cpp: what every ByteSource does unless it knows better, and sources over memory.
#include "io/source.hpp"

#include <algorithm>
#include <utility>

#include "common/copy.hpp"
#include "common/parallel.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {
// read_ranges stays on one thread below this: a thread costs more than copying a few MiB.
constexpr uint64_t kParallelReadFrom = uint64_t{8} << 20;
}  // namespace

void ByteSource::read(uint64_t offset, std::span<std::byte> dst) const {
  // Sources that are not in memory override this; a memory source copies.
  if (memory_.empty() && !dst.empty()) throw_io("source cannot be read", name_);
  copy_bytes(dst.data(), memory_.data() + offset, dst.size());
}

void ByteSource::read_ranges(std::span<const ReadRange> ranges, unsigned threads) const {
  uint64_t total = 0;
  for (const ReadRange& r : ranges) total += r.size;  // no overflow: each range lies in the source
  // Bytes [b, e) of the ranges laid end to end; each thread takes one such stretch.
  auto read_stretch = [&](uint64_t b, uint64_t e) {
    uint64_t at = 0;
    for (const ReadRange& r : ranges) {
      const uint64_t from = std::max(b, at), to = std::min(e, at + r.size);
      if (from < to)
        read(r.offset + (from - at), {r.dst + (from - at), static_cast<size_t>(to - from)});
      at += r.size;
      if (at >= e) break;
    }
  };
  const unsigned n = thread_count(threads ? threads : configured_threads());
  parallel_for(total, kParallelReadFrom, 4096, n, read_stretch);
}

namespace {

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::span<const std::byte> borrowed, std::string name)
      : ByteSource(std::move(name), borrowed.size()) {
    set_memory(borrowed, false);
  }
  MemorySource(std::vector<std::byte> owned, std::string name)
      : ByteSource(std::move(name), owned.size()), owned_(std::move(owned)) {
    set_memory(owned_, true);
  }

 private:
  std::vector<std::byte> owned_;
};

}  // namespace

std::shared_ptr<const ByteSource> borrowed_memory_source(std::span<const std::byte> bytes,
                                                         std::string name) {
  return std::make_shared<MemorySource>(bytes, std::move(name));
}

std::shared_ptr<const ByteSource> owned_memory_source(std::vector<std::byte> bytes,
                                                      std::string name) {
  return std::make_shared<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace tlio::detail
