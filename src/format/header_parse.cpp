// format/header_parse.cpp: validating header parser (reader rules 1-5).
//
// Two walks build a Header. A header that follows the rules (nearly all) is walked once with
// simdjson On-Demand, straight into the Header (big ones in two halves on two threads); that walk
// only accepts, and hands anything else to the DOM walk: simdjson's DOM parser (runtime-dispatched
// SIMD kernels), then a walk of the tree. There rule 2 failures (syntax, duplicate keys at any
// level) end the walk at once; the first rule 3 and the first rule 4 failure are remembered and
// reported after the walk, so a file that breaks several rules reports the lowest-numbered one,
// as docs/format.md ("Reading: the rules, in the order they are checked") orders them.
#include "format/header_parse.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "format/name_index.hpp"
#include "common/json_text.hpp"
#include "common/checked.hpp"
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
// JSON nesting allowed (simdjson's default parser depth); deeper input is rule 2.
inline constexpr size_t kMaxJsonDepth = simdjson::DEFAULT_MAX_DEPTH;

static_assert(detail::kJsonPadding == simdjson::SIMDJSON_PADDING);
// The shortest tensor entry: "":{"dtype":"U8","shape":[],"data_offsets":[0,0]}, plus its comma.
inline constexpr size_t kMinEntryBytes = 49;
// Headers from this size on are walked in two halves on two threads (walk_in_halves): about
// 13,000 tensors. Below it a thread costs more than it saves.
inline constexpr size_t kSplitWalkBytes = size_t{1} << 20;

namespace {

// The length of the JSON string whose text begins at `raw` (after its opening quote), up to its
// closing quote or its first escape, whichever comes first: raw[result] says which.
size_t unescaped_length(const char* raw) noexcept {
  size_t n = 0;
  while (raw[n] != '"' && raw[n] != '\\') ++n;
  return n;
}

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

[[noreturn]] void rule2(std::string detail, std::string tensor = {}) {
  throw_format(Rule::r2_json, std::move(tensor), std::move(detail));
}

std::string json_error_text(simdjson::error_code e) {
  switch (e) {
    case simdjson::EMPTY:
      return "header is empty or only whitespace";
    case simdjson::UTF8_ERROR:
      return "header is not valid UTF-8";
    case simdjson::DEPTH_ERROR:
      return fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth);
    case simdjson::STRING_ERROR:
      return "invalid JSON string (bad escape or lone surrogate)";
    case simdjson::UNESCAPED_CHARS:
      return "invalid JSON string (unescaped control character)";
    case simdjson::UNCLOSED_STRING:
      return "invalid JSON string (unclosed)";
    case simdjson::NUMBER_ERROR:
      return "invalid JSON number";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "invalid JSON literal";
    case simdjson::TAPE_ERROR:
      return "invalid JSON (bad structure, trailing characters, or bytes outside the JSON value)";
    default:
      return fmt::format("invalid JSON ({})", simdjson::error_message(e));
  }
}

// simdjson reports a number it cannot represent (an integer of 2^64 or more, a float that
// overflows) with the same code as a malformed one. Such numbers are valid JSON; wherever they
// stand in a header they break rule 3 or 4 exactly as any other number there would. So replace
// each one by "-1" padded with spaces (same length, same verdict) and parse again; a malformed
// number is left alone and still fails as rule 2. Returns false when nothing was replaced.
bool neutralize_unrepresentable_numbers(std::string& text) {
  bool changed = false;
  bool in_string = false;
  size_t i = 0;
  const size_t n = text.size();
  auto is_num_char = [](char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  };
  while (i < n) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        i += 2;
      else {
        if (c == '"') in_string = false;
        ++i;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++i;
      continue;
    }
    if (c != '-' && !(c >= '0' && c <= '9')) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < n && is_num_char(text[i])) ++i;
    std::string_view tok(text.data() + start, i - start);
    // JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    size_t p = 0;
    if (p < tok.size() && tok[p] == '-') ++p;
    auto digits = [&] {
      size_t s = p;
      while (p < tok.size() && tok[p] >= '0' && tok[p] <= '9') ++p;
      return p - s;
    };
    size_t int_start = p;
    size_t int_digits = digits();
    bool ok = int_digits > 0 && !(int_digits > 1 && tok[int_start] == '0');
    bool is_integer = true;
    if (ok && p < tok.size() && tok[p] == '.') {
      ++p;
      is_integer = false;
      ok = digits() > 0;
    }
    if (ok && p < tok.size() && (tok[p] == 'e' || tok[p] == 'E')) {
      ++p;
      is_integer = false;
      if (p < tok.size() && (tok[p] == '+' || tok[p] == '-')) ++p;
      ok = digits() > 0;
    }
    if (!ok || p != tok.size()) continue;  // malformed: leave it for the parser to reject
    bool representable;
    if (is_integer) {
      if (tok[0] == '-') {
        int64_t v;
        representable = std::from_chars(tok.data(), tok.data() + tok.size(), v).ec == std::errc{};
      } else {
        uint64_t v;
        representable = std::from_chars(tok.data(), tok.data() + tok.size(), v).ec == std::errc{};
      }
    } else {
      std::string copy(tok);
      double v = std::strtod(copy.c_str(), nullptr);
      representable = std::isfinite(v);
    }
    if (!representable) {
      text.replace(start, tok.size(), "-1" + std::string(tok.size() - 2, ' '));
      changed = true;
    }
  }
  return changed;
}

std::optional<dom::object> as_object(dom::element el) {
  dom::object o;
  if (el.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  return o;
}

std::optional<dom::array> as_array(dom::element el) {
  dom::array a;
  if (el.get_array().get(a) != simdjson::SUCCESS) return std::nullopt;
  return a;
}

// Rule 2 at any depth: no object may hold two equal keys (compared after unescaping).
void check_no_duplicate_keys(dom::element el, const std::string& tensor) {
  if (el.is_object()) {
    dom::object obj = *as_object(el);
    std::vector<std::string_view> keys;
    for (auto field : obj) {
      keys.push_back(field.key);
      check_no_duplicate_keys(field.value, tensor);
    }
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end()) rule2(fmt::format("duplicate key {}", quote_name(*dup)), tensor);
  } else if (el.is_array()) {
    dom::array arr = *as_array(el);
    for (auto child : arr) check_no_duplicate_keys(child, tensor);
  }
}

// Comparison with a literal that the compiler can inline (the walk does it three times a tensor).
template <size_t N>
bool key_is(std::string_view key, const char (&lit)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), lit, N - 1) == 0;
}

std::optional<uint64_t> as_u64(dom::element el) {
  uint64_t v;
  if (el.get_uint64().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}


}  // namespace

// The validator, in the steps docs/format.md orders the rules by: parse the JSON (rule 2), walk it
// into raw entries, remembering the first metadata (rule 3) and entry (rule 4) failures, check
// names are unique (rule 2, which outranks 3 and 4), then the layout (rule 5). A header in memory
// with padding after it first tries the one-pass On-Demand walk (walk_valid_json), which only
// accepts; anything else goes through the DOM walk, which explains.
class HeaderBuilder {
 public:
  static Header build(std::span<const std::byte> json, uint64_t data_size, bool padded) {
    if (padded)
      if (std::optional<Header> h = build_on_demand(json, data_size, kSplitWalkBytes))
        return std::move(*h);
    return build_dom(json, data_size, padded);
  }

  // nullopt when the JSON breaks rule 2, 3 or 4, or has anything the fast walk gives up on.
  // A header of `split_from` bytes or more is walked in two halves at once (see walk_in_halves).
  static std::optional<Header> build_on_demand(std::span<const std::byte> json, uint64_t data_size,
                                               size_t split_from) {
    HeaderBuilder b(data_size);
    b.reserve_for(json.size());
    static const bool several_cores = std::thread::hardware_concurrency() > 1;
    const bool walked = json.size() >= split_from && several_cores ? b.walk_in_halves(json)
                                                                   : b.walk_whole(json);
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
      if (key_is(field.key, "__metadata__"))
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
  explicit HeaderBuilder(uint64_t data_size) { h_.data_size_ = data_size; }

  // How a walk of the members of the top object ended.
  enum class WalkEnd { rejected, whole, at_split };
  static constexpr size_t kNoSplit = ~size_t{0};
  WalkEnd walk_valid_json(std::span<const std::byte> json, od::parser& parser,
                          size_t split = kNoSplit);
  // On-Demand does not count the entries first: reserve for the most a header of this size can
  // hold, so the vectors never grow by copying. Pages past the ones used are never touched, so
  // the surplus costs address space only.
  void reserve_for(size_t json_size) {
    h_.tensors_.reserve(json_size / kMinEntryBytes + 1);
    h_.name_slots_.reserve(json_size / kMinEntryBytes + 1);
  }
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
  PendingError rule3_, rule4_;
  bool seen_metadata_ = false;
  bool in_offset_order_ = true;  // tensors in file order sorted by (begin, end) so far
  bool tiled_ = true;            // and each begins where the one before it ends
  bool names_sorted_ = false;    // name_slots_ in index order already (walk_in_halves)
  // Headers repeat a few dtype names: the last one parsed is remembered.
  std::string_view last_dtype_text_;
  Dtype last_dtype_ = Dtype::F32;
};

// The fast path, for headers that follow rules 2-4 (nearly all): simdjson On-Demand walks the JSON
// once, straight into the Header, without building a DOM tape first (10-20% less time than the
// DOM walk, docs/benchmarks.md). It accepts only what the DOM walk accepts, and gives up at the
// first thing it does not expect: any JSON or rule 3/4 error, an unknown or repeated field, a
// field name or dtype written with escapes, a number that is not a plain u64. The DOM walk then
// runs from the start and says what is wrong, so messages and the order of rules come from one
// place. (Stage 1, which checks UTF-8 and control characters, is runtime-dispatched; the walk is
// simdjson's portable code. header_walks_test and fuzz_file check the walks agree.)
//
// walk_valid_json walks the members of the top object of `json` (padded). With `split`, it stops
// before the member whose key begins at byte `split` (at_split); when no member begins there, it
// goes on to the end as if no split had been asked for (whole).
HeaderBuilder::WalkEnd HeaderBuilder::walk_valid_json(std::span<const std::byte> json,
                                                      od::parser& parser, size_t split) {
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
    if (split != kNoSplit && static_cast<size_t>(raw - 1 - base) >= split) {
      if (static_cast<size_t>(raw - 1 - base) == split) return WalkEnd::at_split;
      split = kNoSplit;
    }
    const size_t n = unescaped_length(raw);
    std::string_view key(raw, n);
    if (raw[n] == '\\' && field.unescaped_key().get(key)) return WalkEnd::rejected;
    if (!(key_is(key, "__metadata__") ? walk_valid_metadata(field.value())
                                      : walk_valid_entry(key, field.value())))
      return WalkEnd::rejected;
  }
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
// past the middle, taken as the end of one tensor entry and the start of the next member's key.
// A second thread walks "{" + the text from there; this thread walks the whole text and stops at
// that member. Reaching a member that begins exactly there proves the guess (the text before it
// tokenizes the same alone, so the second half's walk is the rest of this one); when no member
// begins there (the `},"` was inside a string, say), this walk simply goes on to the end and the
// other half's work is dropped. Either way the result is the one walk_whole gives.
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
  const WalkEnd first = walk_valid_json(json, whole_header_parser(json.size(), big), split);
  if (first != WalkEnd::at_split) return first == WalkEnd::whole;  // (worker joins on return)
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

// Rule 2: the header is one JSON object (simdjson; a parser per thread, reused while its buffers
// stay small).
dom::object HeaderBuilder::parse_json(std::span<const std::byte> json, bool padded,
                                      std::unique_ptr<dom::parser>& big_parser,
                                      std::string& rescued) {
  if (json.size() >= 3 && json[0] == std::byte{0xEF} && json[1] == std::byte{0xBB} &&
      json[2] == std::byte{0xBF})
    rule2("byte-order mark before the JSON object (not JSON whitespace)");
  thread_local dom::parser cached_parser(kRetainedParserCapacity);
  dom::parser* parser = &cached_parser;
  if (json.size() > kRetainedParserCapacity) {
    big_parser = std::make_unique<dom::parser>();
    parser = big_parser.get();
  }
  dom::element root;
  auto err =
      parser->parse(reinterpret_cast<const uint8_t*>(json.data()), json.size(), !padded).get(root);
  if (err == simdjson::NUMBER_ERROR) {
    rescued.assign(reinterpret_cast<const char*>(json.data()), json.size());
    if (neutralize_unrepresentable_numbers(rescued)) err = parser->parse(rescued).get(root);
  }
  if (err) rule2(json_error_text(err));
  if (!root.is_object()) rule2("header is not a JSON object");
  return *as_object(root);
}

// Rule 3: __metadata__ is an object of strings (null: none, as MLX writes).
void HeaderBuilder::read_metadata(dom::element value) {
  if (seen_metadata_) rule2("duplicate key \"__metadata__\"");
  seen_metadata_ = true;
  if (value.is_null()) return;
  if (!value.is_object()) {
    check_no_duplicate_keys(value, {});
    rule3_.record(Rule::r3_metadata, "__metadata__", "__metadata__ is not an object of strings");
    return;
  }
  h_.has_metadata_ = true;
  dom::object meta = *as_object(value);
  for (auto entry : meta) {
    std::string_view text;
    if (entry.value.get_string().get(text) != simdjson::SUCCESS) {
      check_no_duplicate_keys(entry.value, std::string(entry.key));
      rule3_.record(Rule::r3_metadata, std::string(entry.key),
                    fmt::format("metadata value of {} is not a string", quote_name(entry.key)));
      h_.metadata_.try_emplace(std::string(entry.key));
      continue;
    }
    if (!h_.metadata_.try_emplace(std::string(entry.key), text).second)
      rule2(fmt::format("duplicate key {} in __metadata__", quote_name(entry.key)),
            std::string(entry.key));
  }
}

// Rule 4 for one tensor entry: exactly the fields dtype, shape, data_offsets, each well typed,
// and offsets spanning the tensor's size. (Duplicate names are found after the walk.)
[[gnu::flatten]] void HeaderBuilder::read_entry(std::string_view key, dom::element value) {
  h_.name_slots_.push_back(detail::name_index_key(key, static_cast<uint32_t>(h_.tensors_.size())));
  TensorInfo& info = h_.tensors_.emplace_back();
  info.name.assign(key.data(), key.size());
  if (!value.is_object()) {
    check_no_duplicate_keys(value, info.name);
    bad_entry(info, fmt::format("entry of {} is not an object with fields dtype, shape, "
                                "data_offsets", quote_name(key)));
    return;
  }
  std::optional<dom::element> dtype_el, shape_el, offsets_el;
  dom::object fields = *as_object(value);
  for (auto f : fields) {
    std::optional<dom::element>* slot = key_is(f.key, "dtype")          ? &dtype_el
                                        : key_is(f.key, "shape")        ? &shape_el
                                        : key_is(f.key, "data_offsets") ? &offsets_el
                                                                        : nullptr;
    if (slot == nullptr) {
      check_no_duplicate_keys(f.value, info.name);
      bad_entry(info, fmt::format("unknown field {} in the entry of {} (allowed: dtype, shape, "
                                  "data_offsets)", quote_name(f.key), quote_name(key)));
      continue;
    }
    if (*slot)
      rule2(fmt::format("duplicate key {} in the entry of {}", quote_name(f.key), quote_name(key)),
            info.name);
    *slot = f.value;
  }
  if (!dtype_el || !shape_el || !offsets_el) {
    bad_entry(info, fmt::format("entry of {} lacks field {}", quote_name(key),
                                !dtype_el ? "dtype" : !shape_el ? "shape" : "data_offsets"));
    for (auto* el : {&dtype_el, &shape_el, &offsets_el})
      if (*el) check_no_duplicate_keys(**el, info.name);
    return;
  }
  const bool dtype_ok = read_dtype(*dtype_el, info).has_value();
  const bool shape_ok = read_shape(*shape_el, info);
  const bool offsets_ok = read_offsets(*offsets_el, info);
  if (dtype_ok && shape_ok && offsets_ok && !rule4_.set) check_size(info);
}

std::optional<Dtype> HeaderBuilder::read_dtype(dom::element el, TensorInfo& info) {
  std::string_view text;
  std::optional<Dtype> dtype;
  if (el.get_string().get(text) == simdjson::SUCCESS) {
    if (text == last_dtype_text_) {
      dtype = last_dtype_;
    } else if ((dtype = parse_dtype(text))) {
      last_dtype_text_ = text;
      last_dtype_ = *dtype;
    }
  }
  if (dtype) {
    info.dtype = *dtype;
    return dtype;
  }
  check_no_duplicate_keys(el, info.name);
  if (el.is_string())
    bad_entry(info, fmt::format("unknown dtype {} for tensor {}", quote_name(text), quote_name(info.name)));
  else
    bad_entry(info, fmt::format("dtype of tensor {} is not a string", quote_name(info.name)));
  return std::nullopt;
}

bool HeaderBuilder::read_shape(dom::element el, TensorInfo& info) {
  bool ok = el.is_array();
  if (ok) {
    dom::array dims = *as_array(el);
    info.shape.reserve(dims.size());
    for (auto d : dims) {
      auto v = as_u64(d);
      if (!v) {
        check_no_duplicate_keys(d, info.name);
        ok = false;
        break;
      }
      info.shape.push_back(*v);
    }
  } else {
    check_no_duplicate_keys(el, info.name);
  }
  if (!ok)
    bad_entry(info, fmt::format("shape of tensor {} is not a list of integers in [0, 2^64)",
                                quote_name(info.name)));
  return ok;
}

bool HeaderBuilder::read_offsets(dom::element el, TensorInfo& info) {
  std::optional<uint64_t> begin, end;
  if (el.is_array()) {
    dom::array offs = *as_array(el);
    if (offs.size() == 2) {
      auto it = offs.begin();
      begin = as_u64(*it);
      ++it;
      end = as_u64(*it);
    }
  }
  if (!begin || !end) {
    check_no_duplicate_keys(el, info.name);
    bad_entry(info, fmt::format("data_offsets of tensor {} is not [begin, end] with integers in "
                                "[0, 2^64)", quote_name(info.name)));
    return false;
  }
  info.begin = *begin;
  info.end = *end;
  note_offset_order(info);
  return true;
}

// The size in bits, like the reference (any zero dimension makes the tensor empty), must not
// overflow, must be whole bytes, and must be what data_offsets span.
void HeaderBuilder::check_size(const TensorInfo& info) {
  const detail::TensorSize size = detail::tensor_size(dtype_bits(info.dtype), info.shape);
  if (size.problem == detail::TensorSize::Problem::overflow)
    return bad_entry(info, fmt::format("size of tensor {} ({} {}) overflows 64 bits",
                                       quote_name(info.name), dtype_name(info.dtype),
                                       fmt::join(info.shape, "x")));
  if (size.problem == detail::TensorSize::Problem::partial_byte)
    return bad_entry(info, fmt::format("tensor {} has {} elements of {} bits: not a whole number "
                                       "of bytes", quote_name(info.name), size.elements,
                                       dtype_bits(info.dtype)));
  if (info.end < info.begin || info.end - info.begin != size.bytes)
    bad_entry(info, fmt::format("tensor {} ({} [{}]) needs {} bytes but data_offsets [{}, {}] "
                                "span {}", quote_name(info.name), dtype_name(info.dtype),
                                fmt::join(info.shape, ", "), size.bytes, info.begin, info.end,
                                info.end < info.begin ? std::string("a negative range")
                                                      : std::to_string(info.end - info.begin)));
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
    detail::name_index_build(h_.name_slots_, h_.tensors_.size(),
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
  if (expected_begin != h_.data_size_)
    throw_format(Rule::r5_layout, {},
                 fmt::format("data ends at {}, file has {} data bytes", expected_begin, h_.data_size_),
                 detail::checked_add(data_start, std::min(expected_begin, h_.data_size_)));
}

Header Header::parse(std::span<const std::byte> json, uint64_t data_size) {
  return HeaderBuilder::build(json, data_size, false);
}

Header detail::parse_header(std::span<const std::byte> json, uint64_t data_size, bool padded) {
  return HeaderBuilder::build(json, data_size, padded);
}

std::optional<Header> detail::parse_header_on_demand(std::span<const std::byte> json,
                                                     uint64_t data_size, size_t split_from) {
  return HeaderBuilder::build_on_demand(json, data_size, split_from);
}

Header detail::parse_header_dom(std::span<const std::byte> json, uint64_t data_size,
                               bool padded) {
  return HeaderBuilder::build_dom(json, data_size, padded);
}

namespace {
// What the first bytes of a PyTorch checkpoint say it is, or "" for anything else.
std::string_view checkpoint_kind(std::span<const std::byte> prefix) {
  const std::string_view b(reinterpret_cast<const char*>(prefix.data()), prefix.size());
  if (b.substr(0, 4) == "PK\x03\x04" || b.substr(0, 4) == "PK\x05\x06")
    return "a zip archive, as torch.save writes PyTorch checkpoints";
  if (b.size() >= 2 && b[0] == '\x80' && b[1] >= 2 && b[1] <= 5)
    return "a Python pickle, as PyTorch checkpoints before torch 1.6 are";
  return {};
}
}  // namespace

std::string detail::describe_foreign_file(std::span<const std::byte> prefix) {
  const std::string_view b(reinterpret_cast<const char*>(prefix.data()), prefix.size());
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (const std::string_view kind = checkpoint_kind(prefix); !kind.empty()) return std::string(kind);
  if (starts("GGUF")) return "a GGUF file (llama.cpp)";
  if (starts("\x93NUMPY")) return "a NumPy .npy array";
  if (starts("\x89HDF\r\n\x1a\n")) return "an HDF5 file (Keras .h5 weights are)";
  if (starts("\x1f\x8b")) return "gzip-compressed data";
  if (starts("\x28\xb5\x2f\xfd")) return "zstd-compressed data";
  // Text: no control bytes besides tab, newline, carriage return (UTF-8 lead bytes are fine).
  if (b.size() < 4) return {};
  for (char c : b) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') return {};
    if (u == 0x7f) return {};
  }
  const size_t first = b.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (b[first] == '{' || b[first] == '['))
    return "JSON text (a config or index file?)";
  return "text";
}

uint64_t detail::read_header_length(std::span<const std::byte> prefix, uint64_t file_size) {
  // A file that is not safetensors at all fails here; say what it looks like.
  auto fail = [&](std::string reason) {
    const std::string looks_like = describe_foreign_file(prefix);
    if (!checkpoint_kind(prefix).empty())  // what to do matters more than why
      reason = fmt::format("not a safetensors file but {}: convert it with `tlio import`", looks_like);
    else if (!looks_like.empty())
      reason = fmt::format("not a safetensors file: this looks like {} ({})", looks_like, reason);
    throw_format(Rule::r1_length, {}, std::move(reason), 0);
  };
  if (file_size < 8 || prefix.size() < 8)
    fail(fmt::format("file is {} bytes, shorter than the 8-byte header length", file_size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<uint64_t>(prefix[i]);
  if (n > kMaxHeaderSize)
    fail(fmt::format("header length {} exceeds the limit of {}", n, kMaxHeaderSize));
  if (8 + n > file_size)
    fail(fmt::format("header length {} runs past the end of the file ({} bytes)", n, file_size));
  return n;
}

uint64_t TensorInfo::element_count() const noexcept {
  for (uint64_t d : shape)
    if (d == 0) return 0;
  uint64_t c = 1;
  for (uint64_t d : shape) c *= d;  // validated headers guarantee no overflow here
  return c;
}

const TensorInfo* Header::find(std::string_view name) const noexcept {
  int64_t pos = detail::name_index_find(
      name_slots_, name, [this](uint32_t p) -> std::string_view { return tensors_[p].name; });
  return pos < 0 ? nullptr : &tensors_[static_cast<size_t>(pos)];
}

const TensorInfo& Header::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
              fmt::format("no tensor named {}", quote_name(name)));
}

std::vector<std::string_view> Header::sorted_names() const {
  std::vector<std::string_view> names;
  names.reserve(tensors_.size());
  for (const auto& t : tensors_) names.emplace_back(t.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tlio
