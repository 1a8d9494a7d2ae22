// tlio/read_plan.hpp: read plans. A plan lists tensors, or slices of them, each with the buffer
// it goes to; executing it turns every slice into byte ranges, coalesces them, and reads them
// with large positional reads (local files) or ranged requests (every remote source), several at
// once, straight into the buffers. A dry run lists the reads. A quantized weight is asked for by
// its logical name: only the parts of its stored tensors the slice needs are read, and it is
// dequantized into the buffer.
//
// Plans are also how processes share reads (tlio.torch.load_distributed): each one builds its
// plan, the reads of all are split among them, and the bytes one process read are handed to the
// plans of the others with deliver().
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/shape.hpp"

namespace tlio {

struct ReadPlanOptions {
  /// Bytes held in scratch buffers at once (reads that span gaps between wanted ranges); a
  /// longer read is done in pieces. A quantized item's parts are held besides, in memory of
  /// their own (only the pages its slice touches), until the plan is cleared or destroyed.
  uint64_t max_inflight_bytes = uint64_t{64} << 20;
  /// Wanted ranges of one file at most this far apart are read as one (the gap is read and
  /// dropped). Unset: 64 KiB for local files, 1 MiB for remote ones.
  std::optional<uint64_t> max_gap = std::nullopt;
  /// Threads for local reads and dequantization (0: set_conversion_threads' setting).
  unsigned threads = 0;
  /// Quantized weights listed as their stored tensors, read as they are, instead of by their
  /// logical names, dequantized.
  bool keep_packed = false;
  /// Token and warnings, as File::open takes them. Local files are read with positional reads
  /// (Backend::pread: no page faults, no mapping left behind), or past the page cache where
  /// open.backend is Backend::direct (a cold model read once); any other backend is pread.
  OpenOptions open = {};
};

/// A tensor a plan can ask for.
struct PlanTensor {
  std::string name;
  Shape shape;
  /// Its dtype; for a quantized weight, the one it dequantizes to unless asked otherwise.
  Dtype dtype = Dtype::F32;
  bool quantized = false;
};

/// Where an item's bytes are stored, when they are one contiguous range of one file.
struct PlanItemRange {
  size_t file = 0;      ///< index into ReadPlan::file_names()
  uint64_t offset = 0;  ///< from the file's first byte
};

/// One item added to a plan: what will be in its buffer.
struct PlanItem {
  std::string name;
  std::vector<uint64_t> shape;  ///< the slice's shape (C order)
  Dtype dtype = Dtype::F32;
  uint64_t byte_size = 0;  ///< exactly what its buffer must hold
  /// Set when the item is one contiguous range of a stored tensor (the tensor whole, or a range
  /// of its leading rows). A direct plan reads into a buffer whose address is congruent to
  /// `stored->offset` modulo kDirectAlignment without a bounce copy.
  std::optional<PlanItemRange> stored;
};

/// A contiguous range of one file's data buffer that executing a plan reads.
struct PlannedRead {
  size_t file = 0;      ///< index into ReadPlan::file_names()
  uint64_t offset = 0;  ///< data offset, as TensorInfo::begin counts
  uint64_t length = 0;
};

namespace detail {
struct ReadPlanState;
}

class TLIO_API ReadPlan {
 public:
  /// Opens `source`: a .safetensors file, a folder of weights (its index's shards, else
  /// model.safetensors; no config.json needed), or a URL of either (any registered scheme).
  /// Headers and quantized weights are checked as File::open and find_quantized_weights check
  /// them.
  static ReadPlan open(const std::filesystem::path& source, ReadPlanOptions options = {});

  /// The source as messages name it, and its files (one, or the shards in index order).
  const std::string& name() const noexcept;
  const std::vector<std::string>& file_names() const noexcept;
  /// What the plan can ask for: every stored tensor, in file then offset order, except that a
  /// quantized weight's stored tensors are one entry under its logical name, listed after them
  /// (keep_packed lists the stored tensors instead). A stored tensor that has a quantized
  /// weight's logical name is refused at open (Error{format}) unless keep_packed.
  std::span<const PlanTensor> tensors() const noexcept;
  /// nullptr when there is no such entry.
  const PlanTensor* find(std::string_view name) const noexcept;

  /// Adds `name` (sliced; no indices: whole) and returns the item's index. `as` is the dtype
  /// of a quantized weight's values (F32, F16 or BF16; default: PlanTensor::dtype); a stored
  /// tensor is copied as it is, so `as` must be empty or its own dtype. A quantized weight's
  /// slice may cut anywhere. Throws Error{not_found} and Error{invalid_argument} (the slice,
  /// as plan_slice checks it).
  size_t add(std::string_view name, std::span<const SliceIndex> slice = {},
             std::optional<Dtype> as = std::nullopt);
  std::span<const PlanItem> items() const noexcept;
  /// Removes every item (and frees quantized items' scratch), keeping the files open and
  /// their headers parsed: for loading a source in batches that each fit in memory.
  void clear() noexcept;
  /// The caller's buffer for item `item`: exactly its byte_size bytes, kept alive and left
  /// alone until execute() or finish() returns. Error{invalid_argument} for another size, or
  /// for a quantized item's buffer not aligned to its values (2 or 4 bytes).
  void set_destination(size_t item, std::span<std::byte> dst);

  /// The reads executing the plan makes: wanted ranges merged across gaps up to max_gap, in
  /// file and offset order. A dry run: nothing is read.
  std::vector<PlannedRead> reads() const;
  /// The ranges the items want, merged only where they touch or overlap: reads() without the
  /// gaps (what another process must deliver).
  std::vector<PlannedRead> wanted() const;
  /// The bytes the items' buffers receive from the files: the sum of wanted()'s lengths.
  uint64_t wanted_bytes() const;

  /// Reads every item into its buffer (Error{invalid_argument} if one has none) and
  /// dequantizes quantized ones. Asks the thread's InterruptScope between reads.
  void execute();

  /// For bytes read elsewhere (another process's share of reads()): copies `bytes`, the data
  /// bytes of file `file` at data offset `offset`, to where the items want them. Bytes no item
  /// wants are skipped. Call finish() when every wanted byte has been delivered.
  void deliver(size_t file, uint64_t offset, std::span<const std::byte> bytes);
  /// Dequantizes the quantized items from what was delivered (Error{invalid_argument} if an
  /// item has no destination).
  void finish();
  /// Reads data bytes of file `file` as execute() would (bounds-checked).
  void read_data(size_t file, uint64_t offset, std::span<std::byte> dst) const;

  ReadPlan(ReadPlan&&) noexcept;
  ReadPlan& operator=(ReadPlan&&) noexcept;
  ~ReadPlan();

 private:
  explicit ReadPlan(std::unique_ptr<detail::ReadPlanState> state);
  std::unique_ptr<detail::ReadPlanState> state_;
};

}  // namespace tlio
