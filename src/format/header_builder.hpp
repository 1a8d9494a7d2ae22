// format/header_builder.hpp: what the header walks share: HeaderBuilder (both walks build into
// it), the pending rule 3 and 4 errors, and the parser constants.
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "format/header_parse.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio {

using detail::quote_name;
namespace dom = simdjson::dom;
namespace od = simdjson::ondemand;

// A parser keeps its buffers between parses: reusing one saves faulting in tens of MiB per
// multi-MiB header. Parsers that grew past this input capacity are dropped after use, so a
// thread retains at most about 12x this many bytes.
inline constexpr size_t kRetainedParserCapacity = size_t{4} << 20;

static_assert(detail::kJsonPadding == simdjson::SIMDJSON_PADDING);
// The shortest tensor entry: "":{"dtype":"U8","shape":[],"data_offsets":[0,0]}, plus its comma.
inline constexpr size_t kMinEntryBytes = 49;
// Headers from this size on are walked in two halves on two threads (walk_in_halves): about
// 13,000 tensors. Below it a thread costs more than it saves.
inline constexpr size_t kSplitWalkBytes = size_t{1} << 20;

namespace detail {

struct WalkWorkspace;  // a walk's parser and piece text (header_walk_on_demand.cpp)

struct PendingError {
  bool set = false;
  Rule rule = Rule::none;
  std::string tensor, detail;
  std::optional<uint64_t> offset;

  void record(Rule r, std::string t, std::string d) {
    if (set) return;
    set = true;
    rule = r;
    tensor = std::move(t);
    detail = std::move(d);
  }
  void raise_if_set() const {
    if (set) throw_format(rule, tensor, detail, offset);
  }
};

// Throws a rule 2 error (defined in header_parse.cpp).
[[noreturn]] void rule2(std::string detail, std::string tensor = {});

// Comparison with a literal that the compiler can inline (the walk does it three times a tensor).
template <size_t N>
bool key_is(std::string_view key, const char (&lit)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), lit, N - 1) == 0;
}

}  // namespace detail

// The validator, in the steps docs/format.md orders the rules by: parse the JSON (rule 2), walk it
// into raw entries, remembering the first metadata (rule 3) and entry (rule 4) failures, check
// names are unique (rule 2, which outranks 3 and 4), then the layout (rule 5). A header in memory
// with padding after it first tries the one-pass On-Demand walk (walk_valid_json), which only
// accepts; anything else goes through the DOM walk, which explains.
class HeaderBuilder {
 public:
  static Header build(std::span<const std::byte> json, uint64_t data_size, bool padded) {
    if (padded)
      if (std::optional<Header> h = build_on_demand(json, data_size, split_walk_from(json.size()),
                                                    detail::kHeaderPieceBytes))
        return std::move(*h);
    return build_dom(json, data_size, padded);
  }

  // nullopt when the JSON breaks rule 2, 3 or 4, or has anything the fast walk gives up on.
  // A header of `split_from` bytes or more is walked in two halves at once (see walk_in_halves),
  // each in pieces of about `piece_bytes` (walk_pieces).
  static std::optional<Header> build_on_demand(std::span<const std::byte> json, uint64_t data_size,
                                               size_t split_from, size_t piece_bytes) {
    HeaderBuilder b(data_size, piece_bytes);
    b.reserve_for(json.size());
    static const bool several_cores = std::thread::hardware_concurrency() > 1;
    const bool walked =
        json.size() >= split_from && several_cores ? b.walk_in_halves(json) : b.walk_whole(json);
    if (!walked) return std::nullopt;
    b.check_unique_names();
    b.check_layout(8 + json.size());
    return std::move(b.h_);
  }

  static Header build_dom(std::span<const std::byte> json, uint64_t data_size, bool padded) {
    HeaderBuilder b(data_size);
    // `top` views the parser's buffers (a big header gets a parser of its own, freed after the
    // build) and `rescued`, a rewritten copy of the JSON when parse_json needed one.
    std::unique_ptr<dom::parser> big_parser;
    std::string rescued;
    const dom::object top = parse_json(json, padded, big_parser, rescued);
    const size_t key_count = top.size();
    b.h_.tensors_.reserve(key_count);
    b.h_.name_slots_.reserve(key_count);
    for (auto field : top) {
      if (detail::key_is(field.key, "__metadata__"))
        b.read_metadata(field.value);
      else
        b.read_entry(field.key, field.value);
    }
    b.check_unique_names();
    b.rule3_.raise_if_set();
    b.rule4_.raise_if_set();
    b.check_layout(8 + json.size());
    return std::move(b.h_);
  }

 private:
  // `piece_bytes` is clamped so that sums of it cannot wrap.
  explicit HeaderBuilder(uint64_t data_size, size_t piece_bytes = detail::kHeaderPieceBytes)
      : piece_bytes_(std::clamp<size_t>(piece_bytes, 1, kMaxHeaderSize)) {
    h_.data_size_ = data_size;
  }

  // Where build() splits: from kSplitWalkBytes, but not for the process's first big header. Two
  // halves pay off once the allocator holds the memory they need; in a fresh process the second
  // thread's stack, malloc arena, workspace and half of the table are faulted in first, and two
  // halves measured no faster than one walk (docs/benchmarks.md, "Process start-up").
  static size_t split_walk_from(size_t json_size) {
    static std::atomic<bool> walked_big_header{false};
    if (json_size < kSplitWalkBytes) return kSplitWalkBytes;
    return walked_big_header.exchange(true, std::memory_order_relaxed) ? kSplitWalkBytes : kNoSplit;
  }

  // How a walk of the members of the top object ended: rejected, at the end of the whole
  // object, or (a prefix) at the end of the prefix's last member.
  enum class WalkEnd { rejected, whole, prefix };
  static constexpr size_t kNoSplit = ~size_t{0};
  WalkEnd walk_valid_json(std::span<const std::byte> json, od::parser& parser, bool prefix = false);
  // On-Demand does not count the entries first: reserve for the most a header of this size can
  // hold, so the vectors never grow by copying. Pages past the ones used are never touched, so
  // the surplus costs address space only.
  void reserve_for(size_t json_size) {
    h_.tensors_.reserve(json_size / kMinEntryBytes + 1);
    h_.name_slots_.reserve(json_size / kMinEntryBytes + 1);
  }
  // How a walk in pieces ended (walk_pieces).
  enum class PiecesEnd { accepted, rejected, unsure };
  PiecesEnd walk_pieces(std::span<const std::byte> json, size_t begin, size_t end,
                        detail::WalkWorkspace& space);
  void restart(size_t json_size);
  bool walk_whole(std::span<const std::byte> json);
  bool walk_in_halves(std::span<const std::byte> json);
  bool append(HeaderBuilder&& second);
  bool walk_valid_entry(std::string_view key, od::value value);
  bool walk_valid_metadata(od::value value);
  static dom::object parse_json(std::span<const std::byte> json, bool padded,
                                std::unique_ptr<dom::parser>& big_parser, std::string& rescued);
  void read_metadata(dom::element value);
  void read_entry(std::string_view key, dom::element value);
  // Inlined into read_entry: this is the per-tensor path of 10^5-tensor headers.
  [[gnu::always_inline]] inline std::optional<Dtype> read_dtype(dom::element el, TensorInfo& info);
  [[gnu::always_inline]] inline bool read_shape(dom::element el, TensorInfo& info);
  [[gnu::always_inline]] inline bool read_offsets(dom::element el, TensorInfo& info);
  [[gnu::always_inline]] inline void check_size(const TensorInfo& info);
  // Whether the tensors, in file order, are still sorted by (begin, end) and each begins where
  // the one before ends: then check_layout has nothing to sort and, the ends aside, nothing to
  // check (the tensors' bytes need not be read again).
  void note_offset_order(const TensorInfo& info) {
    if (h_.tensors_.size() >= 2) note_offset_order(h_.tensors_[h_.tensors_.size() - 2], info);
  }
  void note_offset_order(const TensorInfo& prev, const TensorInfo& info) {
    if (prev.begin > info.begin || (prev.begin == info.begin && prev.end > info.end))
      in_offset_order_ = false;
    if (info.begin != prev.end) tiled_ = false;
  }
  // The name index's view of the names (positions into tensors_).
  auto name_at() const {
    return [this](uint32_t pos) -> std::string_view { return h_.tensors_[pos].name; };
  }
  void sort_names();
  void check_unique_names();
  void check_layout(uint64_t data_start);
  void bad_entry(const TensorInfo& info, std::string why) {
    rule4_.record(Rule::r4_entry, info.name, std::move(why));
  }

  Header h_;
  size_t piece_bytes_;  // walk_pieces' piece size
  detail::PendingError rule3_, rule4_;
  bool seen_metadata_ = false;
  bool in_offset_order_ = true;  // tensors in file order sorted by (begin, end) so far
  bool tiled_ = true;            // and each begins where the one before it ends
  bool names_sorted_ = false;    // name_slots_ in index order already (walk_in_halves)
  // Headers repeat a few dtype names: the last one parsed is remembered.
  std::string_view last_dtype_text_;
  Dtype last_dtype_ = Dtype::F32;
};

// The size in bits, like the reference (any zero dimension makes the tensor empty), must not
// overflow, must be whole bytes, and must be what data_offsets span. (Defined here: both walks
// inline it, once a tensor.)
void HeaderBuilder::check_size(const TensorInfo& info) {
  const detail::TensorSize size = detail::tensor_size(dtype_bits(info.dtype), info.shape);
  if (size.problem == detail::TensorSize::Problem::overflow)
    return bad_entry(
        info, fmt::format("size of tensor {} ({} {}) overflows 64 bits", quote_name(info.name),
                          dtype_name(info.dtype), fmt::join(info.shape, "x")));
  if (size.problem == detail::TensorSize::Problem::partial_byte)
    return bad_entry(info,
                     fmt::format("tensor {} has {} elements of {} bits: not a whole number "
                                 "of bytes",
                                 quote_name(info.name), size.elements, dtype_bits(info.dtype)));
  if (info.end < info.begin || info.end - info.begin != size.bytes)
    bad_entry(info, fmt::format("tensor {} ({} [{}]) needs {} bytes but data_offsets [{}, {}] "
                                "span {}",
                                quote_name(info.name), dtype_name(info.dtype),
                                fmt::join(info.shape, ", "), size.bytes, info.begin, info.end,
                                info.end < info.begin ? std::string("a negative range")
                                                      : std::to_string(info.end - info.begin)));
}

}  // namespace tlio
