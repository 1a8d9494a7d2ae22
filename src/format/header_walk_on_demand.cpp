// format/header_walk_on_demand.cpp: the On-Demand walk, which accepts a header that follows rules
// 2-4 in one pass (big ones in two halves on two threads) and gives up on anything else.
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
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

// What a walk needs besides its builder: a parser, and room for the text of a piece ("{" + some
// members, padded). Both are kept between walks, so their memory stays faulted in and, pieces
// being small, in the core's cache: one per thread for whole headers (thread_local), a shared
// few for second halves, which run on short-lived threads. A workspace that grew past
// kRetainedParserCapacity (a piece that is one huge member, or a whole walk of a big header)
// gives that memory back after the walk (as parse_json's parsers do).
struct detail::WalkWorkspace {
  od::parser parser;
  std::unique_ptr<std::byte[]> text;  // a piece's text, then kJsonPadding zero bytes
  size_t text_capacity = 0;

  // Room to parse `bytes` of JSON, made before the first piece: simdjson sizes its buffers to
  // the capacity asked for, so pieces each a little longer than the last would each allocate
  // (and fault in) new ones.
  void reserve_parser(size_t bytes) {
    if (parser.capacity() < bytes && parser.allocate(bytes) != simdjson::SUCCESS)
      throw std::bad_alloc();
  }
  // Room for a piece's text of `bytes` (and as much as the parser takes).
  void reserve_text(size_t bytes) {
    if (text_capacity >= bytes) return;
    text_capacity = std::max(bytes, parser.capacity());
    text = std::make_unique_for_overwrite<std::byte[]>(text_capacity + simdjson::SIMDJSON_PADDING);
  }
  void release_if_big() {
    if (parser.capacity() > kRetainedParserCapacity) parser = od::parser();
    if (text_capacity > kRetainedParserCapacity) {
      text.reset();
      text_capacity = 0;
    }
  }
};

namespace {

using detail::WalkWorkspace;

WalkWorkspace& thread_workspace() {
  thread_local WalkWorkspace space;
  return space;
}

class WorkspacePool {
 public:
  std::unique_ptr<WalkWorkspace> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return std::make_unique<WalkWorkspace>();
    auto w = std::move(free_.back());
    free_.pop_back();
    return w;
  }
  void give_back(std::unique_ptr<WalkWorkspace> w) {
    w->release_if_big();
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxPooled) free_.push_back(std::move(w));
  }

 private:
  static constexpr size_t kMaxPooled = 2;
  std::mutex mutex_;
  std::vector<std::unique_ptr<WalkWorkspace>> free_;
};

WorkspacePool& half_workspaces() {
  static WorkspacePool pool;
  return pool;
}

}  // namespace

// Walks the members of the top object in json[begin, end) (`json` padded): `begin` is 0 (the
// text's start) or where a member's key begins, `end` is json.size() or just past the '}' that
// ends a member's value. It goes in pieces of about piece_bytes_ (kHeaderPieceBytes), each cut
// at the first `},"` past that size, taken as the end of one member's value and the start of the
// next member's key: the first piece of the text in place, each other one as "{" + its members
// in `space.text`; a piece that ends before the text does is walked as a prefix. simdjson's index
// of a piece (4 bytes a token) is then reused from piece to piece and stays in the cache, where
// one walk of a 4 MB header writes a 4.4 MB index to memory faulted in for it.
//
// When every piece is accepted, the text is "{" + the pieces' members joined by "," (+ "}"), and
// tokenizes as the pieces do: a prefix ends outside any string (else its last token would be a
// string's quote, not the '}'), so the key after its cut begins a string in the whole text too;
// the result is the one a single walk gives. A piece not accepted means the header breaks a rule
// or has something this walk does not take (rejected) or, when that piece was cut, perhaps only
// that its cut was inside a string (unsure): a single walk of the whole text then decides.
HeaderBuilder::PiecesEnd HeaderBuilder::walk_pieces(std::span<const std::byte> json, size_t begin,
                                                    size_t end, WalkWorkspace& space) {
  const std::string_view text(reinterpret_cast<const char*>(json.data()), json.size());
  // Pieces are piece_bytes_ and a member long, the last one up to half as long again.
  space.reserve_parser(std::min(end - begin + 1, piece_bytes_ + piece_bytes_ * 3 / 4));
  for (size_t at = begin;;) {
    size_t cut = end;
    if (end - at > piece_bytes_ + piece_bytes_ / 2) {  // no small last piece
      const size_t mark = text.find("},\"", at + piece_bytes_);
      if (mark != std::string_view::npos && mark + 1 < end) cut = mark + 1;
    }
    std::span<const std::byte> piece = json.first(cut);
    if (at != 0) {
      const size_t size = 1 + (cut - at);
      space.reserve_text(size);
      space.text[0] = std::byte{'{'};
      std::memcpy(space.text.get() + 1, json.data() + at, cut - at);
      std::memset(space.text.get() + size, 0, simdjson::SIMDJSON_PADDING);
      piece = {space.text.get(), size};
    }
    const bool prefix = cut != json.size();
    if (walk_valid_json(piece, space.parser, prefix) != (prefix ? WalkEnd::prefix : WalkEnd::whole))
      return cut == end ? PiecesEnd::rejected : PiecesEnd::unsure;
    if (cut == end) return PiecesEnd::accepted;
    at = cut + 1;  // past the ',' to the next key's quote
  }
}

// A fresh start for a single walk, after pieces or halves that were not accepted.
void HeaderBuilder::restart(size_t json_size) {
  *this = HeaderBuilder(h_.data_size_, piece_bytes_);
  reserve_for(json_size);
}

bool HeaderBuilder::walk_whole(std::span<const std::byte> json) {
  WalkWorkspace& space = thread_workspace();
  PiecesEnd end = walk_pieces(json, 0, json.size(), space);
  if (end == PiecesEnd::unsure) {
    restart(json.size());
    end = walk_valid_json(json, space.parser) == WalkEnd::whole ? PiecesEnd::accepted
                                                                : PiecesEnd::rejected;
  }
  space.release_if_big();
  return end == PiecesEnd::accepted;
}

// A big header in two halves on two threads: the text is cut at the first `},"` past the middle
// (as walk_pieces cuts), a second thread walks the members from that key on and this thread the
// ones before, each in pieces. Both accepted, the second's members are appended to this one's;
// the first half not accepted, or the second unsure of a cut, a walk of the whole text decides.
bool HeaderBuilder::walk_in_halves(std::span<const std::byte> json) {
  const std::string_view text(reinterpret_cast<const char*>(json.data()), json.size());
  const size_t mark = text.find("},\"", text.size() / 2);
  if (mark == std::string_view::npos) return walk_whole(json);

  HeaderBuilder second(h_.data_size_, piece_bytes_);
  PiecesEnd second_end = PiecesEnd::rejected;
  std::jthread worker;
  try {
    worker = std::jthread([&] {
      try {
        std::unique_ptr<WalkWorkspace> space = half_workspaces().take();
        second.reserve_for(json.size() - mark);
        second_end = second.walk_pieces(json, mark + 2, json.size(), *space);
        half_workspaces().give_back(std::move(space));
        if (second_end == PiecesEnd::accepted) second.sort_names();
      } catch (...) {  // out of memory: this half counts as not walked
        second_end = PiecesEnd::unsure;
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: one walk does it all
    return walk_whole(json);
  }
  WalkWorkspace& space = thread_workspace();
  const PiecesEnd first_end = walk_pieces(json, 0, mark + 1, space);
  space.release_if_big();
  if (first_end == PiecesEnd::accepted) sort_names();
  worker.join();
  if (first_end == PiecesEnd::accepted && second_end == PiecesEnd::accepted)
    return append(std::move(second));
  if (first_end == PiecesEnd::accepted && second_end == PiecesEnd::rejected) return false;
  restart(json.size());
  return walk_whole(json);
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
