// model/read_plan.cpp: ReadPlan. Items become pieces (a file's data range and where its bytes
// go); pieces merged across small gaps are the reads. A read whose pieces tile it goes straight
// into the items' buffers, one positional read or range request per piece (touching ones are
// merged by remote sources); one with gaps or overlaps goes through scratch, at most
// max_inflight_bytes at a time. A quantized item's pieces are parts of its stored tensors, read
// into a small safetensors file of their own (an anonymous mapping: pages never written cost
// nothing), which the scheme's decoder then reads as it reads any file.
#include "tlio/read_plan.hpp"

#include <fmt/core.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "format/file_access.hpp"
#include "format/header_text.hpp"
#include "format/slice.hpp"
#include "io/interrupt.hpp"
#include "io/location.hpp"
#include "model/layout.hpp"
#include "model/location.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio {
namespace detail {
namespace {

// The largest gap a read spans rather than being cut in two: files read by ranges over a network
// (Backend::http) pay a request for each read, local ones a system call.
constexpr uint64_t kLocalGap = uint64_t{64} << 10;
constexpr uint64_t kRemoteGap = uint64_t{1} << 20;
constexpr uint64_t kMinScratch = uint64_t{1} << 20;

// Zero-filled memory that costs only the pages written (MAP_NORESERVE: no swap reserved).
class AnonymousMemory {
 public:
  explicit AnonymousMemory(uint64_t size) : size_(static_cast<size_t>(size)) {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw Error(ErrorCode::io, Rule::none, {}, std::nullopt,
                  fmt::format("cannot reserve {} bytes for a quantized weight's parts", size), {},
                  std::error_code(errno, std::generic_category()));
    data_ = static_cast<std::byte*>(p);
  }
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;
  ~AnonymousMemory() {
    if (data_) ::munmap(data_, size_);
  }
  std::span<std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// A range of a file's data and where its bytes go (nullptr: nowhere yet, for a dry run).
struct Piece {
  size_t file;
  uint64_t offset, length;
  std::byte* dst;
  uint64_t end() const noexcept { return offset + length; }
};

bool piece_order(const Piece& a, const Piece& b) noexcept {
  return a.file != b.file ? a.file < b.file : a.offset < b.offset;
}

// A quantized item: its stored tensors in a file of their own, filled only where the slice
// needs them, and the element runs to decode into the item's buffer.
struct QuantScratch {
  struct Part {
    StoredPart part;
    size_t file;             // the plan's file holding the stored tensor
    const TensorInfo* info;  // there
    uint64_t begin;          // data offset in the scratch file
  };
  struct Run {
    uint64_t first, count, out_offset;
  };
  std::vector<Part> parts;
  std::vector<Run> runs;
  uint64_t data_start = 0;  // 8 + header length
  std::unique_ptr<AnonymousMemory> memory;
};

// Bytes of `part` elements [first, first + count) need, relative to the stored tensor.
ByteRange part_bytes(const StoredPart& p, uint64_t size, uint64_t first, uint64_t count) {
  if (p.unit_elements == 0) return {0, size};
  auto at = [&](uint64_t e) {
    const uint64_t row = p.row_elements ? e / p.row_elements : 0;
    const uint64_t col = p.row_elements ? e % p.row_elements : e;
    return row * p.row_bytes + p.unit_bytes * (col / p.unit_elements);
  };
  const uint64_t b = at(first), e = std::min(size, at(first + count - 1) + p.unit_bytes);
  return {b, e > b ? e - b : 0};
}

}  // namespace

struct ReadPlanState {
  struct Entry {
    size_t file = 0;
    const TensorInfo* info = nullptr;  // a stored tensor
    std::optional<size_t> weight;      // a quantized weight (index into weights)
  };
  struct ItemState {
    size_t entry = 0;
    std::vector<SliceIndex> slice;
    std::span<std::byte> dst;
    bool has_dst = false;
    std::unique_ptr<QuantScratch> quant;
  };

  std::string name;
  std::vector<std::string> file_names;
  std::vector<File> files;
  std::unique_ptr<TensorSet> set;  // over `files`, which never move once opened
  ReadPlanOptions options;
  uint64_t max_gap = 0;
  std::vector<PlanTensor> tensors;
  std::vector<Entry> entries;
  std::vector<std::pair<std::string_view, size_t>> by_name;  // sorted
  std::vector<QuantizedWeight> weights;
  std::vector<PlanItem> items;
  std::vector<ItemState> states;

  // Pieces of every item sorted by (file, offset), with the largest end so far in each file
  // (pieces may overlap); rebuilt when items or destinations change.
  std::vector<Piece> pieces;
  std::vector<uint64_t> max_end;
  bool pieces_current = false;

  void add_pieces(const ItemState& s, bool with_dst, std::vector<Piece>& out) const {
    const Entry& e = entries[s.entry];
    if (s.quant) {
      std::byte* base = with_dst ? s.quant->memory->bytes().data() + s.quant->data_start : nullptr;
      std::vector<ByteRange> ranges;
      for (const QuantScratch::Part& p : s.quant->parts) {
        ranges.clear();
        for (const QuantScratch::Run& r : s.quant->runs) {
          const ByteRange b = part_bytes(p.part, p.info->byte_size(), r.first, r.count);
          if (b.length == 0) continue;
          if (!ranges.empty() && b.offset <= ranges.back().offset + ranges.back().length) {
            ByteRange& last = ranges.back();
            last.length = std::max(last.offset + last.length, b.offset + b.length) - last.offset;
          } else {
            ranges.push_back(b);
          }
          if (p.part.unit_elements == 0) break;  // whole
        }
        for (const ByteRange& b : ranges)
          out.push_back({p.file, p.info->begin + b.offset, b.length,
                         base ? base + p.begin + b.offset : nullptr});
      }
      return;
    }
    const SliceGeometry g = slice_geometry(*e.info, s.slice);
    uint64_t pos = 0;
    std::byte* dst = with_dst ? s.dst.data() : nullptr;
    g.for_each_run([&](uint64_t off, uint64_t len) {
      out.push_back({e.file, e.info->begin + off, len, dst ? dst + pos : nullptr});
      pos += len;
    });
  }

  std::vector<Piece> all_pieces(bool with_dst) const {
    std::vector<Piece> out;
    for (const ItemState& s : states) add_pieces(s, with_dst, out);
    std::sort(out.begin(), out.end(), piece_order);
    return out;
  }

  void check_destinations() const {
    for (size_t i = 0; i < states.size(); ++i)
      if (!states[i].has_dst && items[i].byte_size != 0)
        throw_invalid(fmt::format("item {} ({}) has no destination", i, quote_name(items[i].name)),
                      items[i].name);
  }

  void ensure_pieces() {
    if (pieces_current) return;
    check_destinations();
    pieces = all_pieces(true);
    max_end.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i)
      max_end[i] = (i > 0 && pieces[i - 1].file == pieces[i].file)
                       ? std::max(max_end[i - 1], pieces[i].end())
                       : pieces[i].end();
    pieces_current = true;
  }

  // Calls fn(begin, end) for each run of `sorted` pieces one read covers.
  template <class Fn>
  void for_each_read(const std::vector<Piece>& sorted, uint64_t gap, Fn&& fn) const {
    size_t i = 0;
    while (i < sorted.size()) {
      size_t j = i + 1;
      uint64_t end = sorted[i].end();
      while (j < sorted.size() && sorted[j].file == sorted[i].file &&
             sorted[j].offset <= end + gap) {
        end = std::max(end, sorted[j].end());
        ++j;
      }
      fn(i, j, end);
      i = j;
    }
  }

  void deliver(size_t file, uint64_t offset, std::span<const std::byte> bytes) {
    ensure_pieces();
    const uint64_t end = offset + bytes.size();
    auto lo = std::lower_bound(pieces.begin(), pieces.end(), file,
                               [](const Piece& p, size_t f) { return p.file < f; });
    auto hi = std::upper_bound(lo, pieces.end(), file,
                               [](size_t f, const Piece& p) { return f < p.file; });
    // The first piece of the file that may reach `offset` (max_end is sorted within a file).
    const size_t a = static_cast<size_t>(lo - pieces.begin()),
                 b = static_cast<size_t>(hi - pieces.begin());
    size_t i = static_cast<size_t>(
        std::upper_bound(max_end.begin() + static_cast<std::ptrdiff_t>(a),
                         max_end.begin() + static_cast<std::ptrdiff_t>(b), offset) -
        max_end.begin());
    for (; i < b && pieces[i].offset < end; ++i) {
      const Piece& p = pieces[i];
      const uint64_t from = std::max(p.offset, offset), to = std::min(p.end(), end);
      if (from >= to) continue;
      std::memcpy(p.dst + (from - p.offset), bytes.data() + (from - offset),
                  static_cast<size_t>(to - from));
    }
  }

  void finish() {
    check_destinations();
    const unsigned threads = thread_count(options.threads ? options.threads : configured_threads());
    for (size_t i = 0; i < states.size(); ++i) {
      ItemState& s = states[i];
      if (!s.quant || s.quant->runs.empty()) continue;
      const QuantizedWeight& w = weights[*entries[s.entry].weight];
      const std::span<std::byte> memory = s.quant->memory->bytes();
      const File scratch = File::from_buffer(memory, files[s.quant->parts[0].file].name());
      const TensorSet scratch_set({&scratch});
      const auto decoder = scheme_entry(w.scheme.kind()).decoder(scratch_set, w);
      const std::vector<QuantScratch::Run>& runs = s.quant->runs;
      const uint64_t out_bytes = dtype_bits(items[i].dtype) / 8;
      parallel_for(runs.size(), 2, 1, threads, [&](uint64_t b, uint64_t e) {
        for (uint64_t k = b; k < e; ++k)
          decoder->read(runs[k].first, runs[k].count, items[i].dtype,
                        s.dst.subspan(static_cast<size_t>(runs[k].out_offset),
                                      static_cast<size_t>(runs[k].count * out_bytes)));
      });
    }
  }
};

}  // namespace detail

namespace {

using detail::Piece;
using detail::ReadPlanState;

std::unique_ptr<ReadPlanState> open_state(const std::filesystem::path& source,
                                          ReadPlanOptions options) {
  auto s = std::make_unique<ReadPlanState>();
  OpenOptions open = options.open;
  // Local: positional reads, or O_DIRECT ones when asked; a URL's store ignores it.
  if (open.backend != Backend::direct) open.backend = Backend::pread;
  const detail::Location where = detail::Location::parse(source.native());
  s->name = where.display();
  std::string quantization_config;  // a folder's; a lone file has none
  if (detail::is_model_directory(where, open)) {
    const detail::ModelLocation dir(where, open);
    dir.check_directory();
    detail::WeightFiles w = detail::open_weights(dir);
    quantization_config = detail::read_quantization_config(dir, w.files);
    s->file_names = std::move(w.names);
    s->files = std::move(w.files);
  } else {
    s->files.push_back(detail::open_file(where, open));
    s->file_names.push_back(s->files.back().name());
  }
  const bool by_ranges = !s->files.empty() && s->files.front().backend() == Backend::http;
  s->max_gap = options.max_gap.value_or(by_ranges ? detail::kRemoteGap : detail::kLocalGap);
  s->options = std::move(options);

  std::vector<const File*> file_list;
  for (const File& f : s->files) file_list.push_back(&f);
  s->set = std::make_unique<detail::TensorSet>(std::move(file_list));
  s->set->set_quantization_config(std::move(quantization_config));
  std::vector<std::string_view> parts;  // stored tensors listed under a logical name
  if (!s->options.keep_packed) {
    s->weights = detail::find_quantized_weights(*s->set);
    for (const QuantizedWeight& w : s->weights)
      for (const std::string& n : w.stored) parts.push_back(n);
    std::sort(parts.begin(), parts.end());
  }
  for (size_t fi = 0; fi < s->files.size(); ++fi)
    for (const TensorInfo& t : s->files[fi].tensors()) {
      if (std::binary_search(parts.begin(), parts.end(), std::string_view(t.name))) continue;
      s->tensors.push_back({t.name, t.shape, t.dtype, false});
      s->entries.push_back({fi, &t, std::nullopt});
    }
  for (size_t wi = 0; wi < s->weights.size(); ++wi) {
    const QuantizedWeight& w = s->weights[wi];
    // A stored tensor under a weight's logical name (not one of its parts) would hide it.
    if (!std::binary_search(parts.begin(), parts.end(), std::string_view(w.name)) &&
        s->set->find(w.name))
      throw Error(ErrorCode::format, Rule::none, w.name, std::nullopt,
                  fmt::format("tensor {} is stored and is also the name of a quantized weight; "
                              "read the file with keep_packed",
                              detail::quote_name(w.name)),
                  s->name);
    s->tensors.push_back({w.name, w.shape, w.dtype, true});
    s->entries.push_back({0, nullptr, wi});
  }
  for (size_t i = 0; i < s->tensors.size(); ++i) s->by_name.emplace_back(s->tensors[i].name, i);
  std::sort(s->by_name.begin(), s->by_name.end());
  return s;
}

}  // namespace

ReadPlan::ReadPlan(std::unique_ptr<detail::ReadPlanState> state) : state_(std::move(state)) {}
ReadPlan::ReadPlan(ReadPlan&&) noexcept = default;
ReadPlan& ReadPlan::operator=(ReadPlan&&) noexcept = default;
ReadPlan::~ReadPlan() = default;

ReadPlan ReadPlan::open(const std::filesystem::path& source, ReadPlanOptions options) {
  return ReadPlan(open_state(source, std::move(options)));
}

const std::string& ReadPlan::name() const noexcept { return state_->name; }
const std::vector<std::string>& ReadPlan::file_names() const noexcept { return state_->file_names; }
std::span<const PlanTensor> ReadPlan::tensors() const noexcept { return state_->tensors; }
std::span<const PlanItem> ReadPlan::items() const noexcept { return state_->items; }

const PlanTensor* ReadPlan::find(std::string_view name) const noexcept {
  const auto& v = state_->by_name;
  auto it = std::lower_bound(v.begin(), v.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  return it != v.end() && it->first == name ? &state_->tensors[it->second] : nullptr;
}

size_t ReadPlan::add(std::string_view name, std::span<const SliceIndex> slice,
                     std::optional<Dtype> as) {
  ReadPlanState& s = *state_;
  const PlanTensor* t = find(name);
  if (!t)
    throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
                "no tensor named " + detail::quote_name(name), s.name);
  const size_t entry = static_cast<size_t>(t - s.tensors.data());
  const ReadPlanState::Entry& e = s.entries[entry];
  ReadPlanState::ItemState st;
  st.entry = entry;
  st.slice.assign(slice.begin(), slice.end());
  PlanItem item;
  item.name = t->name;
  if (!e.weight) {
    if (as && *as != e.info->dtype)
      throw_invalid(
          fmt::format("tensor {} is {}; a plan copies stored tensors as they are, not as {}",
                      detail::quote_name(name), dtype_name(e.info->dtype), dtype_name(*as)),
          t->name);
    const detail::SliceGeometry g = detail::slice_geometry(*e.info, slice);
    item.shape = g.out_shape;
    item.dtype = e.info->dtype;
    item.byte_size = g.byte_size();
    if (g.run_count == 1)
      g.for_each_run([&](uint64_t off, uint64_t) {
        item.stored =
            PlanItemRange{e.file, 8 + s.files[e.file].header_size() + e.info->begin + off};
      });
  } else {
    const QuantizedWeight& w = s.weights[*e.weight];
    const Dtype out = as.value_or(w.dtype);
    if (out != Dtype::F32 && out != Dtype::F16 && out != Dtype::BF16)
      throw_invalid(fmt::format("quantized weight {} dequantizes to F32, F16 or BF16, not {}",
                                detail::quote_name(name), dtype_name(out)),
                    t->name);
    // The slice's geometry in elements: a U8 tensor of the logical shape.
    TensorInfo logical;
    logical.name = w.name;
    logical.dtype = Dtype::U8;
    logical.shape = w.shape;
    logical.end = detail::checked_product(w.shape).value_or(0);
    const detail::SliceGeometry g = detail::slice_geometry(logical, slice);
    const uint64_t out_bytes = dtype_bits(out) / 8;
    item.shape = g.out_shape;
    item.dtype = out;
    const std::optional<uint64_t> size = detail::checked_mul(g.byte_size(), out_bytes);
    if (!size) throw_invalid("the slice's size overflows", t->name);
    item.byte_size = *size;
    auto q = std::make_unique<detail::QuantScratch>();
    uint64_t pos = 0;
    g.for_each_run([&](uint64_t first, uint64_t count) {
      q->runs.push_back({first, count, pos});
      pos += count * out_bytes;
    });
    // The stored tensors laid out as a file of their own, so the decoder reads it as any file.
    std::vector<TensorInfo> layout;
    for (detail::StoredPart& p : detail::scheme_entry(w.scheme.kind()).parts(*s.set, w)) {
      const TensorInfo& info = s.set->at(p.name);
      const size_t fi = s.set->position(p.name).first;
      q->parts.push_back({std::move(p), fi, &info, 0});
      TensorInfo copy;
      copy.name = info.name;
      copy.dtype = info.dtype;
      copy.shape = info.shape;
      copy.end = info.byte_size();
      layout.push_back(std::move(copy));
    }
    detail::canonical_layout(layout);
    uint64_t data_size = 0;
    for (const TensorInfo& l : layout) {
      data_size = std::max(data_size, l.end);
      for (auto& p : q->parts)
        if (p.info->name == l.name) p.begin = l.begin;
    }
    const std::string header = detail::canonical_header(s.files[0].metadata(), layout);
    q->data_start = 8 + header.size();
    q->memory = std::make_unique<detail::AnonymousMemory>(q->data_start + data_size);
    std::byte* m = q->memory->bytes().data();
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) m[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
    std::memcpy(m + 8, header.data(), header.size());
    st.quant = std::move(q);
  }
  s.items.push_back(std::move(item));
  s.states.push_back(std::move(st));
  s.pieces_current = false;
  return s.items.size() - 1;
}

void ReadPlan::clear() noexcept {
  state_->items.clear();
  state_->states.clear();  // and with them the quantized items' scratch
  state_->pieces.clear();
  state_->max_end.clear();
  state_->pieces_current = false;
}

void ReadPlan::set_destination(size_t item, std::span<std::byte> dst) {
  ReadPlanState& s = *state_;
  if (item >= s.items.size())
    throw_invalid(fmt::format("no item {} (the plan has {})", item, s.items.size()));
  if (dst.size() != s.items[item].byte_size)
    throw_invalid(fmt::format("destination holds {} bytes, item {} ({}) needs {}", dst.size(), item,
                              detail::quote_name(s.items[item].name), s.items[item].byte_size),
                  s.items[item].name);
  // The decoders store whole F32/F16/BF16 values.
  const size_t element = dtype_bits(s.items[item].dtype) / 8;
  if (s.states[item].quant && element > 1 && reinterpret_cast<uintptr_t>(dst.data()) % element != 0)
    throw_invalid(fmt::format("destination of item {} ({}) is not aligned to its {}-byte values",
                              item, detail::quote_name(s.items[item].name), element),
                  s.items[item].name);
  s.states[item].dst = dst;
  s.states[item].has_dst = true;
  s.pieces_current = false;
}

namespace {

std::vector<PlannedRead> merged_pieces(const ReadPlanState& s, uint64_t gap) {
  const std::vector<Piece> pieces = s.all_pieces(false);
  std::vector<PlannedRead> out;
  s.for_each_read(pieces, gap, [&](size_t i, size_t, uint64_t end) {
    out.push_back({pieces[i].file, pieces[i].offset, end - pieces[i].offset});
  });
  return out;
}

}  // namespace

std::vector<PlannedRead> ReadPlan::reads() const { return merged_pieces(*state_, state_->max_gap); }

std::vector<PlannedRead> ReadPlan::wanted() const { return merged_pieces(*state_, 0); }

uint64_t ReadPlan::wanted_bytes() const {
  uint64_t total = 0;
  for (const PlannedRead& r : wanted()) total += r.length;
  return total;
}

void ReadPlan::execute() {
  ReadPlanState& s = *state_;
  s.ensure_pieces();
  const unsigned threads = s.options.threads;
  // Reads whose pieces tile them go straight to the buffers, all of a file's in one batch.
  std::vector<std::vector<DataRange>> direct(s.files.size());
  struct Window {
    size_t file;
    uint64_t offset, length;
  };
  std::vector<Window> windows;  // the rest, through scratch
  const uint64_t window_max = std::max(detail::kMinScratch, s.options.max_inflight_bytes);
  s.for_each_read(s.pieces, s.max_gap, [&](size_t i, size_t j, uint64_t end) {
    bool tiles = true;
    for (size_t k = i + 1; k < j && tiles; ++k) tiles = s.pieces[k].offset == s.pieces[k - 1].end();
    if (tiles) {
      for (size_t k = i; k < j; ++k)
        direct[s.pieces[k].file].push_back(
            {s.pieces[k].offset, {s.pieces[k].dst, static_cast<size_t>(s.pieces[k].length)}});
      return;
    }
    for (uint64_t off = s.pieces[i].offset; off < end; off += window_max)
      windows.push_back({s.pieces[i].file, off, std::min(window_max, end - off)});
  });
  for (size_t f = 0; f < s.files.size(); ++f)
    if (!direct[f].empty()) s.files[f].read_data_many(direct[f], threads);
  // Windows in batches of at most max_inflight_bytes, each batch's reads in one call per file.
  std::vector<std::byte> scratch;
  size_t w = 0;
  while (w < windows.size()) {
    detail::poll_interrupt();
    size_t end = w;
    uint64_t bytes = 0;
    while (end < windows.size() && (end == w || bytes + windows[end].length <= window_max))
      bytes += windows[end++].length;
    scratch.resize(static_cast<size_t>(bytes));
    std::vector<DataRange> batch;
    uint64_t pos = 0;
    for (size_t k = w; k < end; ++k) {
      if (k > w && windows[k].file != windows[k - 1].file) {
        s.files[windows[k - 1].file].read_data_many(batch, threads);
        batch.clear();
      }
      batch.push_back(
          {windows[k].offset, {scratch.data() + pos, static_cast<size_t>(windows[k].length)}});
      pos += windows[k].length;
    }
    s.files[windows[end - 1].file].read_data_many(batch, threads);
    pos = 0;
    for (size_t k = w; k < end; ++k) {
      s.deliver(windows[k].file, windows[k].offset,
                {scratch.data() + pos, static_cast<size_t>(windows[k].length)});
      pos += windows[k].length;
    }
    w = end;
  }
  s.finish();
}

void ReadPlan::deliver(size_t file, uint64_t offset, std::span<const std::byte> bytes) {
  if (file >= state_->files.size())
    throw_invalid(fmt::format("no file {} (the plan has {})", file, state_->files.size()));
  if (!detail::checked_add(offset, bytes.size()))
    throw_invalid(fmt::format("{} bytes at data offset {} overflow", bytes.size(), offset));
  state_->deliver(file, offset, bytes);
}

void ReadPlan::finish() { state_->finish(); }

void ReadPlan::read_data(size_t file, uint64_t offset, std::span<std::byte> dst) const {
  if (file >= state_->files.size())
    throw_invalid(fmt::format("no file {} (the plan has {})", file, state_->files.size()));
  state_->files[file].read_data(offset, dst);
}

}  // namespace tlio
