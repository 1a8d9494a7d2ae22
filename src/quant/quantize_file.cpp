// quant/quantize_file.cpp: whole-file quantize and dequantize (tlio quantize / dequantize).
// Both stream: tensors are processed in chunks of elements, so memory stays bounded whatever the
// model size (a nested bnb weight keeps its absmax, one float per block, until the end).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include <fmt/core.h>

#include "common/text.hpp"
#include "common/json_text.hpp"
#include "io/checked.hpp"
#include "quant/bnb_file.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {

using detail::quote_name;

namespace {

// Input elements processed per chunk when quantizing or dequantizing (a multiple of every bnb
// blocksize, so chunks hold whole blocks).
constexpr uint64_t kChunkElements = uint64_t{4} << 20;

uint64_t element_count(const Shape& shape) { return detail::checked_product(shape).value_or(0); }

// Squared and largest error of a quantized chunk against its input. This runs over every
// weight, so it is written with vector types (four float lanes on the SSE2 baseline): the
// differences and their squares in float, summed in float over runs of 1024 values and the
// run sums in double (relative error ~1e-7, plenty for a report).
struct ErrorStats {
  using F4 = float __attribute__((vector_size(16)));
  static constexpr size_t kRun = 1024;
  double squares = 0;
  float max_abs = 0;

  void add(std::span<const float> input, std::span<const float> restored) {
    const size_t n = input.size();
    F4 largest{};
    size_t i = 0;
    while (i + 16 <= n) {
      F4 run[4] = {};
      for (const size_t end = std::min(n - n % 16, i + kRun); i < end; i += 16)
        for (size_t k = 0; k < 4; ++k) {
          F4 a, b;
          std::memcpy(&a, input.data() + i + 4 * k, sizeof a);
          std::memcpy(&b, restored.data() + i + 4 * k, sizeof b);
          const F4 d = b - a;
          const F4 mag = d < 0 ? -d : d;
          run[k] += d * d;
          largest = mag > largest ? mag : largest;
        }
      for (const F4& r : run) squares += static_cast<double>(r[0]) + r[1] + r[2] + r[3];
    }
    for (int l = 0; l < 4; ++l) max_abs = std::max(max_abs, largest[l]);
    for (; i < n; ++i) {
      const float d = restored[i] - input[i];
      squares += static_cast<double>(d) * d;
      max_abs = std::max(max_abs, std::fabs(d));
    }
  }
  void finish(QuantizeReport::Item& item, uint64_t n) const {
    item.rmse = n ? std::sqrt(squares / static_cast<double>(n)) : 0;
    item.max_abs_error = max_abs;
  }
};

// Calls fn(first, values) on consecutive chunks of `t` as F32; `align` elements divide every
// chunk size (whole rows or whole blocks). F32 tensors are read in place (zero-copy) when
// aligned; other dtypes are converted into `buf`, which callers keep across tensors so its
// pages are faulted in once.
template <class Fn>
void for_each_f32_chunk(const File& src, const TensorInfo& t, uint64_t align,
                        std::vector<float>& buf, Fn&& fn) {
  const uint64_t n = t.element_count(), bits = dtype_bits(t.dtype);
  const uint64_t per = std::max<uint64_t>(align, kChunkElements / align * align);
  const TensorView view = src.view(t.name);
  const std::byte* data = view.bytes().data();
  const bool in_place = t.dtype == Dtype::F32 && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0;
  for (uint64_t i = 0; i < n; i += per) {
    const uint64_t m = std::min(per, n - i);
    if (in_place) {
      fn(i, std::span<const float>(reinterpret_cast<const float*>(data) + i, m));
      continue;
    }
    buf.resize(std::max<size_t>(buf.size(), m));
    convert(t.dtype, view.bytes().subspan(i * bits / 8, m * bits / 8), Dtype::F32,
            std::as_writable_bytes(std::span(buf).first(m)), m);
    fn(i, std::span<const float>(buf).first(m));
  }
}
// One quantization scheme applied to whole tensors: what it cannot take, the tensors it
// declares for a weight, and how it streams them.
class Scheme {
 public:
  virtual ~Scheme() = default;
  /// Why `t` cannot be quantized, or "".
  virtual std::string unquantizable(const TensorInfo& t) const = 0;
  /// The stored tensors that will replace `t` (checked for name clashes, then declared).
  virtual std::vector<TensorData> outputs(const File& src, const TensorInfo& t) = 0;
  virtual void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
                     const std::function<void(uint64_t)>& tick) = 0;

 protected:
  // Scratch kept across tensors (a model has hundreds): converted input, dequantized chunk.
  std::vector<float> input_, back_;
};

// ---- tinyllm int4 ----------------------------------------------------------------------------

class Int4Scheme final : public Scheme {
 public:
  explicit Int4Scheme(uint64_t group) : group_(group) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() != 2) return fmt::format("rank {} (int4 needs a matrix)", t.shape.size());
    if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
      return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
    if (t.shape[1] % 2) return fmt::format("{} columns (int4 needs an even number)", t.shape[1]);
    if (t.shape[1] % group_)
      return fmt::format("{} columns are not a multiple of group {}", t.shape[1], group_);
    return {};
  }

  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    return {{t.name + ".qweight", Dtype::U8, {t.shape[0], t.shape[1] / 2}, {}},
            {t.name + ".scales", Dtype::F16, {t.shape[0], t.shape[1] / group_}, {}}};
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const uint64_t cols = t.shape[1];
    ErrorStats stats;
    for_each_f32_chunk(src, t, std::max<uint64_t>(cols, 1), input_, [&](uint64_t, std::span<const float> block) {
      const uint64_t rows = block.size() / cols;
      back_.resize(block.size());
      q_.resize(block.size() / 2);
      s_.resize(block.size() / group_);
      int4_quantize(block, rows, cols, group_, q_, s_);
      int4_dequantize_rows(q_, s_, rows, cols, group_, 0, rows, Dtype::F32,
                           std::as_writable_bytes(std::span(back_)));
      stats.add(block, back_);
      w.append(t.name + ".qweight", std::as_bytes(std::span(q_)));
      w.append(t.name + ".scales", std::as_bytes(std::span(s_)));
      tick(q_.size() + s_.size() * 2);
    });
    stats.finish(item, t.element_count());
  }

 private:
  uint64_t group_;
  std::vector<uint8_t> q_;
  std::vector<uint16_t> s_;
};

// ---- bitsandbytes 4-bit ----------------------------------------------------------------------

class Bnb4Scheme final : public Scheme {
 public:
  Bnb4Scheme(BnbQuantType type, uint64_t blocksize, bool nested, Dtype storage)
      : type_(type), blocksize_(blocksize), nested_(nested), storage_(storage) {}

  std::string unquantizable(const TensorInfo& t) const override {
    if (t.dtype != Dtype::F16 && t.dtype != Dtype::BF16 && t.dtype != Dtype::F32)
      return fmt::format("dtype {} (bitsandbytes quantizes F16, BF16 or F32)", dtype_name(t.dtype));
    const uint64_t n = t.element_count();
    if (n == 0) return "no elements";
    const uint64_t bytes = n / 2 + n % 2, item = dtype_bits(storage_) / 8;
    if (bytes % item)
      return fmt::format("{} packed bytes do not fill whole {} storage elements", bytes,
                         dtype_name(storage_));
    return {};
  }

  std::vector<TensorData> outputs(const File& src, const TensorInfo& t) override {
    Weight& wt = weights_[t.name];
    const uint64_t n = t.element_count(), blocks = n / blocksize_ + (n % blocksize_ != 0);
    const uint64_t packed = n / 2 + n % 2;
    BnbQuantState st;
    st.quant_type = type_;
    st.blocksize = blocksize_;
    st.dtype = t.dtype;
    st.shape = t.shape;
    wt.absmax.resize(blocks);
    if (nested_) {
      // The offset goes into the JSON, whose size is part of the header: the absmax of the
      // whole tensor is needed before anything is written.
      for_each_f32_chunk(src, t, blocksize_, input_, [&](uint64_t first, std::span<const float> x) {
        packed_.resize(x.size() / 2 + x.size() % 2);
        bnb_quantize_4bit(x, type_, blocksize_, packed_,
                          std::span(wt.absmax).subspan(first / blocksize_,
                                                       (x.size() + blocksize_ - 1) / blocksize_));
      });
      wt.nest = bnb_nest_absmax(wt.absmax);
      st.nested = true;
      st.nested_blocksize = wt.nest.blocksize;
      st.nested_offset = wt.nest.offset;
      wt.effective = bnb_unnest_absmax(wt.nest.codes, wt.nest.absmax2, bnb_dynamic_map(),
                                       wt.nest.blocksize, wt.nest.offset);
    }
    wt.state_json = bnb_quant_state_json(st);
    wt.state_name = t.name + std::string(detail::kBnbStateInfix) + std::string(bnb_quant_type_name(type_));
    std::vector<TensorData> out;
    // The packed weight replaces the tensor under its own name (declared by the caller).
    out.push_back({t.name, storage_, {packed / (dtype_bits(storage_) / 8), 1}, {}});
    out.push_back({t.name + ".absmax", nested_ ? Dtype::U8 : Dtype::F32, {blocks}, {}});
    out.push_back({t.name + ".quant_map", Dtype::F32, {16}, {}});
    if (nested_) {
      out.push_back({t.name + ".nested_absmax", Dtype::F32, {wt.nest.absmax2.size()}, {}});
      out.push_back({t.name + ".nested_quant_map", Dtype::F32, {256}, {}});
    }
    out.push_back({wt.state_name, Dtype::U8, {wt.state_json.size()}, {}});
    return out;
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    Weight& wt = weights_.at(t.name);
    ErrorStats stats;
    for_each_f32_chunk(src, t, blocksize_, input_, [&](uint64_t first, std::span<const float> x) {
      const uint64_t blocks = x.size() / blocksize_ + (x.size() % blocksize_ != 0);
      packed_.resize(x.size() / 2 + x.size() % 2);
      chunk_absmax_.resize(blocks);
      bnb_quantize_4bit(x, type_, blocksize_, packed_, chunk_absmax_);
      std::span<const float> effective = chunk_absmax_;
      if (nested_) {
        effective = std::span<const float>(wt.effective).subspan(first / blocksize_, blocks);
      } else {
        std::copy(chunk_absmax_.begin(), chunk_absmax_.end(), wt.absmax.begin() + static_cast<ptrdiff_t>(first / blocksize_));
      }
      back_.resize(x.size());
      bnb_dequantize_4bit(packed_, effective, type_, blocksize_, 0, x.size(), Dtype::F32,
                          std::as_writable_bytes(std::span(back_)));
      stats.add(x, back_);
      w.append(t.name, std::as_bytes(std::span(packed_)));
      tick(packed_.size());
    });
    stats.finish(item, t.element_count());
    auto put = [&](const std::string& name, std::span<const std::byte> bytes) {
      w.write(name, bytes);
      tick(bytes.size());
    };
    if (nested_) {
      put(t.name + ".absmax", std::as_bytes(std::span(wt.nest.codes)));
      put(t.name + ".nested_absmax", std::as_bytes(std::span(wt.nest.absmax2)));
      put(t.name + ".nested_quant_map", std::as_bytes(std::span(bnb_dynamic_map())));
    } else {
      put(t.name + ".absmax", std::as_bytes(std::span(wt.absmax)));
    }
    put(t.name + ".quant_map", std::as_bytes(std::span(bnb_4bit_table(type_))));
    put(wt.state_name, std::as_bytes(std::span(wt.state_json)));
    weights_.erase(t.name);
  }

 private:
  struct Weight {
    std::vector<float> absmax;     // per block
    BnbNestedAbsmax nest;          // nested only
    std::vector<float> effective;  // nested only: the absmax dequantization will use
    std::string state_json, state_name;  // the quant_state tensor's bytes and name
  };
  BnbQuantType type_;
  uint64_t blocksize_;
  bool nested_;
  Dtype storage_;
  std::map<std::string, Weight> weights_;
  std::vector<uint8_t> packed_;
  std::vector<float> chunk_absmax_;
};

// ---- LLM.int8 --------------------------------------------------------------------------------

class Int8Scheme final : public Scheme {
 public:
  std::string unquantizable(const TensorInfo& t) const override {
    if (t.shape.size() != 2) return fmt::format("rank {} (int8 needs a matrix)", t.shape.size());
    if (!is_floating(t.dtype) || !can_convert(t.dtype, Dtype::F32))
      return fmt::format("dtype {} is not a floating type", dtype_name(t.dtype));
    if (!t.name.ends_with(".weight"))
      return "name does not end in .weight (LLM.int8 stores <module>.SCB beside <module>.weight)";
    return {};
  }

  std::vector<TensorData> outputs(const File&, const TensorInfo& t) override {
    const std::string prefix = t.name.substr(0, t.name.size() - 7);
    return {{t.name, Dtype::I8, t.shape, {}},
            {prefix + ".SCB", Dtype::F32, {t.shape[0]}, {}},
            {prefix + ".weight_format", Dtype::U8, {}, {}}};
  }

  void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
             const std::function<void(uint64_t)>& tick) override {
    const std::string prefix = t.name.substr(0, t.name.size() - 7);
    const uint64_t cols = t.shape[1];
    std::vector<int8_t> cb;
    std::vector<float> scb, all_scb;
    ErrorStats stats;
    for_each_f32_chunk(src, t, std::max<uint64_t>(cols, 1), input_, [&](uint64_t, std::span<const float> x) {
      const uint64_t rows = x.size() / cols;
      cb.resize(x.size());
      scb.resize(rows);
      back_.resize(x.size());
      llm_int8_quantize(x, rows, cols, cb, scb);
      llm_int8_dequantize(cb, scb, cols, 0, x.size(), Dtype::F32, std::as_writable_bytes(std::span(back_)));
      stats.add(x, back_);
      all_scb.insert(all_scb.end(), scb.begin(), scb.end());
      w.append(t.name, std::as_bytes(std::span(cb)));
      tick(cb.size());
    });
    stats.finish(item, t.element_count());
    w.write(prefix + ".SCB", std::as_bytes(std::span(all_scb)));
    const std::byte row_format{0};
    w.write(prefix + ".weight_format", {&row_format, 1});
    tick(all_scb.size() * 4 + 1);
  }
};

std::unique_ptr<Scheme> make_scheme(const QuantizeOptions& o) {
  if (auto group = parse_int4_scheme(o.scheme)) return std::make_unique<Int4Scheme>(*group);
  if (auto type = parse_bnb_quant_type(o.scheme)) {
    if (!is_bnb_4bit_blocksize(o.blocksize))
      throw_invalid(fmt::format("blocksize {} is not one of 32, 64, ..., 4096", o.blocksize));
    if (o.storage != Dtype::U8 && o.storage != Dtype::I8 && o.storage != Dtype::F16 &&
        o.storage != Dtype::BF16 && o.storage != Dtype::F32 && o.storage != Dtype::F64)
      throw_invalid(fmt::format("quant storage {} is not U8, I8, F16, BF16, F32 or F64",
                                dtype_name(o.storage)));
    return std::make_unique<Bnb4Scheme>(*type, o.blocksize, o.nested, o.storage);
  }
  if (o.scheme == "int8") return std::make_unique<Int8Scheme>();
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              fmt::format("unknown quantization scheme {} (int4-g<group>-sym, nf4, fp4, int8)",
                          quote_name(o.scheme)));
}

}  // namespace

bool is_quant_scheme(std::string_view scheme) noexcept {
  return parse_int4_scheme(scheme) || parse_bnb_quant_type(scheme) || scheme == "int8";
}

QuantizeReport quantize_file(const File& src, const std::filesystem::path& out,
                             const QuantizeOptions& options) {
  const std::unique_ptr<Scheme> scheme = make_scheme(options);
  const bool int4 = parse_int4_scheme(options.scheme).has_value();
  const detail::NameFilter filter(options.include, options.exclude);

  // Weights already quantized stay as they are; a file holds one int4 group.
  std::vector<QuantizedWeight> existing = find_quantized_weights(src);
  for (const auto& q : existing)
    if (int4 && parse_int4_scheme(q.scheme) && q.scheme != options.scheme)
      throw_invalid(fmt::format("the file already holds {} weights; cannot add {}", q.scheme,
                                options.scheme));
  auto is_stored_part = [&](const std::string& name) {
    for (const auto& w : existing)
      for (const auto& s : w.stored)
        if (s == name) return true;
    return is_quantization_companion(src, name);
  };

  QuantizeReport report;
  Writer w = Writer::to_file(out);
  Metadata meta = src.metadata();
  if (int4) {
    meta["format"] = "tinyllm";
    meta["quant"] = options.scheme;
  }
  w.set_metadata(meta);
  std::vector<const TensorInfo*> selected;
  std::vector<size_t> item_of;
  for (const TensorInfo& t : src.tensors()) {
    bool pick = !is_stored_part(t.name) &&
                filter.selects(t.name, t.name.ends_with("_proj.weight") && t.shape.size() == 2);
    if (pick) {
      std::string why = scheme->unquantizable(t);
      if (!why.empty()) {
        if (filter.has_include())
          throw Error(ErrorCode::invalid_argument, Rule::none, t.name, std::nullopt,
                      fmt::format("cannot quantize {}: {}", quote_name(t.name), why));
        report.items.push_back({t.name, false, why, 0, 0, t.byte_size(), t.byte_size()});
        pick = false;
      }
    }
    if (!pick) {
      w.declare(t.name, t.dtype, t.shape);
      continue;
    }
    QuantizeReport::Item item{t.name, true, {}, 0, 0, t.byte_size(), 0};
    try {
      for (TensorData& d : scheme->outputs(src, t)) {
        if (d.name != t.name && src.header().find(d.name))
          throw_invalid(fmt::format("cannot quantize {}: {} already exists", quote_name(t.name),
                                    quote_name(d.name)));
        item.bytes_after += *detail::checked_mul(element_count(d.shape), dtype_bits(d.dtype)) / 8;
        w.declare(d.name, d.dtype, d.shape);
      }
    } catch (const Error& e) {
      if (!e.tensor().empty()) throw;
      throw e.with_tensor(t.name, "tensor " + quote_name(t.name));
    }
    selected.push_back(&t);
    item_of.push_back(report.items.size());
    report.items.push_back(std::move(item));
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  const std::function<void(uint64_t)> tick = [&](uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  };
  // Copy the others first (in-kernel), then quantize chunk by chunk.
  for (const TensorInfo& t : src.tensors())
    if (std::find(selected.begin(), selected.end(), &t) == selected.end()) {
      w.copy_from(t.name, src, t.name);
      tick(t.byte_size());
    }
  for (size_t k = 0; k < selected.size(); ++k) {
    const TensorInfo& t = *selected[k];
    try {
      scheme->write(w, src, t, report.items[item_of[k]], tick);
    } catch (const Error& e) {
      if (!e.tensor().empty()) throw;
      throw e.with_tensor(t.name, "tensor " + quote_name(t.name));
    }
  }
  w.commit();
  report.data_bytes_before = src.header().data_size();
  for (const TensorInfo& t : w.layout()) report.data_bytes_after += t.byte_size();
  return report;
}

DequantizeReport dequantize_file(const File& src, const std::filesystem::path& out,
                                 std::optional<Dtype> dtype, const ProgressCallback& progress) {
  if (dtype && *dtype != Dtype::F32 && *dtype != Dtype::F16 && *dtype != Dtype::BF16)
    throw_invalid(fmt::format("dequantize writes F32, F16 or BF16, not {}", dtype_name(*dtype)));
  const std::vector<QuantizedWeight> weights = find_quantized_weights(src);
  DequantizeReport report;
  report.restored = weights.size();
  for (const auto& q : weights)
    if (report.scheme.find(q.scheme) == std::string::npos)
      report.scheme += (report.scheme.empty() ? "" : ", ") + q.scheme;
  auto is_stored_part = [&](const std::string& name) {
    for (const auto& q : weights)
      for (const auto& s : q.stored)
        if (s == name) return true;
    return false;
  };
  Writer w = Writer::to_file(out);
  Metadata meta = src.metadata();
  meta.erase("quant");
  w.set_metadata(meta);
  for (const TensorInfo& t : src.tensors())
    if (!is_stored_part(t.name)) w.declare(t.name, t.dtype, t.shape);
  for (const QuantizedWeight& q : weights) {
    if (src.header().find(q.name) && !is_stored_part(q.name))
      throw_invalid(fmt::format("cannot restore {}: a tensor of that name exists", quote_name(q.name)));
    w.declare(q.name, dtype.value_or(q.dtype), q.shape);
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (progress) progress(done, total);
  };
  for (const TensorInfo& t : src.tensors())
    if (!is_stored_part(t.name)) {
      w.copy_from(t.name, src, t.name);
      tick(t.byte_size());
    }
  // Chunks small enough to stay in the cache between being made and being written.
  constexpr uint64_t kDequantizeChunk = uint64_t{128} << 10;
  std::vector<std::byte> buf;  // reused: faulted in once
  for (const QuantizedWeight& q : weights) {
    const QuantizedReader reader(src, q);
    const Dtype to = dtype.value_or(q.dtype);
    const uint64_t n = reader.element_count(), out_bytes = dtype_bits(to) / 8;
    for (uint64_t i = 0; i < n; i += kDequantizeChunk) {
      const uint64_t m = std::min(kDequantizeChunk, n - i);
      buf.resize(std::max<size_t>(buf.size(), m * out_bytes));
      const std::span<std::byte> part = std::span(buf).first(m * out_bytes);
      reader.read(i, m, to, part);
      w.append(q.name, part);
      tick(part.size());
    }
  }
  w.commit();
  return report;
}

}  // namespace tlio
