// format/header_parse.cpp: the validating header parser's entry points (reader rules 2-5), and the
// checks that follow either walk: unique names (rule 2) and the layout (rule 5).
//
// Two walks build a Header. A header that follows the rules (nearly all) is walked once with
// simdjson On-Demand, straight into the Header (big ones in two halves on two threads); that walk
// only accepts, and hands anything else to the DOM walk: simdjson's DOM parser (runtime-dispatched
// SIMD kernels), then a walk of the tree. There rule 2 failures (syntax, duplicate keys at any
// level) end the walk at once; the first rule 3 and the first rule 4 failure are remembered and
// reported after the walk, so a file that breaks several rules reports the lowest-numbered one,
// as docs/format.md ("Reading: the rules, in the order they are checked") orders them.
// The On-Demand walk is in header_walk_on_demand.cpp, the DOM walk in header_walk_dom.cpp, what
// they share in header_builder.hpp; rule 1 is in header_length.cpp.
#include "format/header_parse.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/checked.hpp"
#include "common/text.hpp"
#include "format/header_builder.hpp"
#include "format/name_index.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio {

using detail::rule2;

[[noreturn]] void detail::rule2(std::string detail, std::string tensor) {
  throw_format(Rule::r2_json, std::move(tensor), std::move(detail));
}

void HeaderBuilder::sort_names() {
  detail::name_index_sort(h_.name_slots_, name_at());
  names_sorted_ = true;
}

void HeaderBuilder::check_unique_names() {
  if (!names_sorted_) sort_names();
  if (int64_t dup = detail::name_index_duplicate(h_.name_slots_, name_at()); dup >= 0) {
    const std::string& name = h_.tensors_[static_cast<size_t>(dup)].name;
    rule2(fmt::format("duplicate key {}", quote_name(name)), name);
  }
}

// Rule 5: sorted by (begin, end), the tensors tile the data buffer exactly.
void HeaderBuilder::check_layout(uint64_t data_start) {
  const std::vector<TensorInfo>& all = h_.tensors_;
  if (in_offset_order_ && tiled_ &&
      (all.empty() ? h_.data_size_ == 0
                   : all.front().begin == 0 && all.back().end == h_.data_size_))
    return;  // what the walk saw already proves it
  if (!in_offset_order_) {
    std::stable_sort(h_.tensors_.begin(), h_.tensors_.end(),
                     [](const TensorInfo& a, const TensorInfo& b) {
                       return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                     });
    detail::name_index_build(
        h_.name_slots_, h_.tensors_.size(),
        [this](uint32_t pos) -> std::string_view { return h_.tensors_[pos].name; });
  }
  uint64_t expected_begin = 0;
  for (const TensorInfo& t : h_.tensors_) {
    if (t.begin != expected_begin)
      throw_format(Rule::r5_layout, t.name,
                   fmt::format("tensor {} begins at {}, expected {}", quote_name(t.name), t.begin,
                               expected_begin),
                   detail::checked_add(data_start, t.begin));
    expected_begin = t.end;
  }
  if (h_.data_size_ == detail::kDataSizeUnknown) {  // a stream whose data is still to come
    h_.data_size_ = expected_begin;
    return;
  }
  // A file shorter than its header says is nearly always a copy or download cut short: say so.
  if (expected_begin > h_.data_size_)
    throw_format(
        Rule::r5_layout, {},
        fmt::format("the file ends at {} of {} data bytes: truncated (an incomplete "
                    "download or copy?)",
                    detail::digits_grouped(h_.data_size_), detail::digits_grouped(expected_begin)),
        detail::checked_add(data_start, h_.data_size_));
  if (expected_begin != h_.data_size_)
    throw_format(
        Rule::r5_layout, {},
        fmt::format("data ends at {}, file has {} data bytes", expected_begin, h_.data_size_),
        detail::checked_add(data_start, expected_begin));
}

Header Header::parse(std::span<const std::byte> json, uint64_t data_size) {
  return HeaderBuilder::build(json, data_size, false);
}

Header detail::parse_header(std::span<const std::byte> json, uint64_t data_size, bool padded) {
  return HeaderBuilder::build(json, data_size, padded);
}

std::optional<Header> detail::parse_header_on_demand(std::span<const std::byte> json,
                                                     uint64_t data_size, size_t split_from,
                                                     size_t piece_bytes) {
  return HeaderBuilder::build_on_demand(json, data_size, split_from, piece_bytes);
}

Header detail::parse_header_dom(std::span<const std::byte> json, uint64_t data_size, bool padded) {
  return HeaderBuilder::build_dom(json, data_size, padded);
}

}  // namespace tlio
