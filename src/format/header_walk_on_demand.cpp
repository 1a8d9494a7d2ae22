// format/header_walk_on_demand.cpp: the On-Demand walk, which accepts a header that follows rules
// 2-4 in one pass (big ones in two halves on two threads) and gives up on anything else.
#include <simdjson.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "format/header_builder.hpp"
#include "format/name_index.hpp"
#include "tlio/header.hpp"

namespace tlio {

using detail::key_is;

namespace {

// The length of the JSON string whose text begins at `raw` (after its opening quote), up to its
// closing quote or its first escape, whichever comes first: raw[result] says which.
size_t unescaped_length(const char* raw) noexcept {
  size_t n = 0;
  while (raw[n] != '"' && raw[n] != '\\') ++n;
  return n;
}

}  // namespace

// The fast path, for headers that follow rules 2-4 (nearly all): simdjson On-Demand walks the JSON
// once, straight into the Header, without building a DOM tape first (10-20% less time than the
// DOM walk, docs/benchmarks.md). It accepts only what the DOM walk accepts, and gives up at the
// first thing it does not expect: any JSON or rule 3/4 error, an unknown or repeated field, a
// field name or dtype written with escapes, a number that is not a plain u64. The DOM walk then
// runs from the start and says what is wrong, so messages and the order of rules come from one
// place. (Stage 1, which checks UTF-8 and control characters, is runtime-dispatched; the walk is
// simdjson's portable code. header_walks_test and fuzz_file check the walks agree.)
//
// walk_valid_json walks the members of the top object of `json` (padded). A `prefix` is the
// start of a header cut just after the '}' that ends one member's value: its object is never
// closed, and the walk ends (WalkEnd::prefix) once it has walked the member that uses its last
// token. Asking simdjson for the next member there would read past the prefix; it is not asked.
// (simdjson only checks that a root object's last token is a '}', which the cut keeps.)
HeaderBuilder::WalkEnd HeaderBuilder::walk_valid_json(std::span<const std::byte> json,
                                                      od::parser& parser, bool prefix) {
  const char* const base = reinterpret_cast<const char*>(json.data());
  od::document doc;
  od::object top;
  if (parser.iterate(base, json.size(), json.size() + simdjson::SIMDJSON_PADDING).get(doc) ||
      doc.get_object().get(top))
    return WalkEnd::rejected;
  for (auto result : top) {
    od::field field;
    if (std::move(result).get(field)) return WalkEnd::rejected;
    // A name without escapes is its JSON text (stage 1 has checked its UTF-8 and that it holds
    // no control characters): view it in place rather than copy it out.
    const char* raw = field.key().raw();
    const size_t n = unescaped_length(raw);
    std::string_view key(raw, n);
    if (raw[n] == '\\' && field.unescaped_key().get(key)) return WalkEnd::rejected;
    if (!(key_is(key, "__metadata__") ? walk_valid_metadata(field.value())
                                      : walk_valid_entry(key, field.value())))
      return WalkEnd::rejected;
    const char* next = nullptr;
    if (prefix && doc.current_location().get(next) == simdjson::OUT_OF_BOUNDS)
      return WalkEnd::prefix;
  }
  if (prefix) return WalkEnd::rejected;  // its object ended before the cut
  // Nothing may follow the object: past its last token there is no location left.
  const char* trailing = nullptr;
  return doc.current_location().get(trailing) == simdjson::OUT_OF_BOUNDS ? WalkEnd::whole
                                                                         : WalkEnd::rejected;
}

namespace {

// On-Demand parsers are kept between parses so their buffers stay faulted in: one per thread
// for whole headers, and a shared few for second halves, which run on short-lived threads.
// Buffers for more than kRetainedParserCapacity bytes of JSON are not kept (as parse_json's are
// not).
od::parser& whole_header_parser(size_t json_size, std::unique_ptr<od::parser>& big) {
  thread_local od::parser cached;
  if (json_size <= kRetainedParserCapacity) return cached;
  big = std::make_unique<od::parser>();
  return *big;
}

// What a second half's walk needs besides the builder: its text ("{" + the members from the
// split on, padded) and a parser.
struct HalfWorkspace {
  std::vector<std::byte> text;
  od::parser parser;
};

class HalfWorkspacePool {
 public:
  std::unique_ptr<HalfWorkspace> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return std::make_unique<HalfWorkspace>();
    auto w = std::move(free_.back());
    free_.pop_back();
    return w;
  }
  void give_back(std::unique_ptr<HalfWorkspace> w) {
    if (w->text.size() > kRetainedParserCapacity) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxPooled) free_.push_back(std::move(w));
  }

 private:
  static constexpr size_t kMaxPooled = 2;
  std::mutex mutex_;
  std::vector<std::unique_ptr<HalfWorkspace>> free_;
};

HalfWorkspacePool& half_workspaces() {
  static HalfWorkspacePool pool;
  return pool;
}

}  // namespace

bool HeaderBuilder::walk_whole(std::span<const std::byte> json) {
  std::unique_ptr<od::parser> big;
  return walk_valid_json(json, whole_header_parser(json.size(), big)) == WalkEnd::whole;
}

// A big header in two halves on two threads. The split is guessed in the text: the first `},"`
// past the middle, taken as the end of one member's value and the start of the next member's
// key. A second thread walks "{" + the text from that key on (a copy); this thread walks the
// text up to and including that '}' in place, as a prefix. When both walks accept, the header is
// "{" + the first half's members + "," + the second's + "}", and tokenizes as the halves do: the
// prefix ends outside any string (else its last token would be a string's quote, not the '}'),
// so the key that begins the second half begins a string in the whole text too. The result is
// then the one walk_whole gives. When the prefix is not accepted, the guess may have been inside
// a string: one walk of the whole text decides.
bool HeaderBuilder::walk_in_halves(std::span<const std::byte> json) {
  const std::string_view text(reinterpret_cast<const char*>(json.data()), json.size());
  const size_t mark = text.find("},\"", text.size() / 2);
  if (mark == std::string_view::npos) return walk_whole(json);
  const size_t split = mark + 2;

  HeaderBuilder second(h_.data_size_);
  bool second_ok = false;
  std::jthread worker;
  try {
    worker = std::jthread([&] {
      try {
        std::unique_ptr<HalfWorkspace> space = half_workspaces().take();
        const size_t size = 1 + (json.size() - split);
        space->text.resize(size + simdjson::SIMDJSON_PADDING);
        space->text[0] = std::byte{'{'};
        std::memcpy(space->text.data() + 1, json.data() + split, json.size() - split);
        std::memset(space->text.data() + size, 0, simdjson::SIMDJSON_PADDING);
        second.reserve_for(size);
        second_ok = second.walk_valid_json({space->text.data(), size}, space->parser) ==
                    WalkEnd::whole;
        half_workspaces().give_back(std::move(space));
        if (second_ok) second.sort_names();
      } catch (...) {  // out of memory: this half counts as not walked
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: one walk does it all
    return walk_whole(json);
  }
  std::unique_ptr<od::parser> big;
  if (walk_valid_json(json.first(mark + 1), whole_header_parser(mark + 1, big), true) !=
      WalkEnd::prefix) {
    *this = HeaderBuilder(h_.data_size_);  // (the worker's result is dropped when it joins)
    reserve_for(json.size());
    return walk_whole(json);
  }
  sort_names();
  worker.join();
  return second_ok && append(std::move(second));
}

// Appends the members a second-half walk read after this one's; false when both halves hold
// __metadata__ (the DOM walk then reports the duplicate key).
bool HeaderBuilder::append(HeaderBuilder&& second) {
  if (second.seen_metadata_) {
    if (seen_metadata_) return false;
    seen_metadata_ = true;
    h_.has_metadata_ = second.h_.has_metadata_;
    h_.metadata_ = std::move(second.h_.metadata_);
  }
  std::vector<TensorInfo>& rest = second.h_.tensors_;
  const size_t offset = h_.tensors_.size();
  if (!rest.empty()) {
    if (offset > 0) note_offset_order(h_.tensors_.back(), rest.front());
    in_offset_order_ = in_offset_order_ && second.in_offset_order_;
    tiled_ = tiled_ && second.tiled_;
  }
  h_.tensors_.insert(h_.tensors_.end(), std::make_move_iterator(rest.begin()),
                     std::make_move_iterator(rest.end()));
  // Both halves' name keys are sorted: offset the second's positions and merge.
  const size_t first_keys = h_.name_slots_.size();
  for (uint64_t slot : second.h_.name_slots_) h_.name_slots_.push_back(slot + offset);
  detail::name_index_merge(h_.name_slots_, first_keys, name_at());
  return true;
}

bool HeaderBuilder::walk_valid_metadata(od::value value) {
  if (seen_metadata_) return false;
  seen_metadata_ = true;
  od::json_type type;
  if (value.type().get(type)) return false;
  if (type == od::json_type::null) {
    bool is_null = false;
    return !value.is_null().get(is_null) && is_null;
  }
  od::object meta;
  if (value.get_object().get(meta)) return false;
  h_.has_metadata_ = true;
  for (auto result : meta) {
    od::field field;
    std::string_view key, text;
    if (std::move(result).get(field) || field.unescaped_key().get(key)) return false;
    // The key view lives until the next string is unescaped: copy it first.
    auto [slot, inserted] = h_.metadata_.try_emplace(std::string(key));
    if (!inserted || field.value().get_string().get(text)) return false;
    slot->second.assign(text);
  }
  return true;
}

[[gnu::flatten]] bool HeaderBuilder::walk_valid_entry(std::string_view key, od::value value) {
  h_.name_slots_.push_back(detail::name_index_key(key, static_cast<uint32_t>(h_.tensors_.size())));
  TensorInfo& info = h_.tensors_.emplace_back();
  info.name.assign(key.data(), key.size());
  od::object fields;
  if (value.get_object().get(fields)) return false;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  for (auto result : fields) {
    od::field field;
    if (std::move(result).get(field)) return false;
    const od::raw_json_string k = field.key();
    od::value v = field.value();
    if (k.unsafe_is_equal("dtype")) {
      // Compared in the JSON text, not unescaped: a dtype name is a few ASCII letters, digits
      // and underscores, so one written with an escape is left to the DOM walk.
      od::raw_json_string text;
      if (has_dtype || v.get_raw_json_string().get(text)) return false;
      has_dtype = true;
      if (last_dtype_text_.empty() || !text.unsafe_is_equal(last_dtype_text_)) {
        const char* p = text.raw();
        const size_t n = unescaped_length(p);
        if (p[n] != '"') return false;
        const std::optional<Dtype> d = parse_dtype({p, n});
        if (!d) return false;
        last_dtype_ = *d;
        last_dtype_text_ = dtype_name(*d);
      }
      info.dtype = last_dtype_;
    } else if (k.unsafe_is_equal("shape")) {
      od::array dims;
      if (has_shape || v.get_array().get(dims)) return false;
      has_shape = true;
      for (auto d : dims) {
        uint64_t dim;
        if (d.get_uint64().get(dim)) return false;
        info.shape.push_back(dim);
      }
    } else if (k.unsafe_is_equal("data_offsets")) {
      od::array offs;
      if (has_offsets || v.get_array().get(offs)) return false;
      has_offsets = true;
      uint64_t pair[2];
      size_t n = 0;
      for (auto o : offs)
        if (n == 2 || o.get_uint64().get(pair[n++])) return false;
      if (n != 2) return false;
      info.begin = pair[0];
      info.end = pair[1];
    } else {
      return false;
    }
  }
  if (!has_dtype || !has_shape || !has_offsets) return false;
  note_offset_order(info);
  check_size(info);
  return !rule4_.set;
}

}  // namespace tlio
