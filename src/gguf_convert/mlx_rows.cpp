// gguf_convert/mlx_rows.cpp: a weight written in MLX's layout row by row, each row proven
// (mlx_rows.hpp).
#include "gguf_convert/mlx_rows.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "gguf_convert/carry_proof.hpp"
#include "gguf_convert/gguf_export_parts.hpp"
#include "quant/mlx/mlx_kernels.hpp"
#include "quant/mlx/mlx_layout.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

// Row `r` requantized from the source's values as mx.quantize does (affine), its scales rounded
// to T.
void requantize_row(const float* values, uint64_t cols, const MlxCarry& c, uint64_t r, MlxPiece& p,
                    std::vector<uint8_t>& codes, std::string_view name) {
  const auto bits = static_cast<unsigned>(c.options.bits);
  const uint64_t group = c.options.group, groups = cols / group, row_words = cols * bits / 32;
  codes.resize(cols);
  for (uint64_t g = 0; g < groups; ++g) {
    float& s = p.scales[r * groups + g];
    float& b = p.biases[r * groups + g];
    if (!mlx_affine_group(values + g * group, group, bits, s, b, &codes[g * group]))
      throw Error(ErrorCode::format, Rule::quant, std::string(name), std::nullopt,
                  fmt::format("{} holds a value that is not finite: MLX's quantization has no "
                              "code for it",
                              name));
    s = mlx_round(c.scale_dtype, s);
    b = mlx_round(c.scale_dtype, b);
  }
  std::fill_n(&p.words[r * row_words], row_words, 0u);
  mlx_pack(codes.data(), cols, bits, 0, &p.words[r * row_words]);
}

// Row `r`'s values as MLX's decoder computes them from what is stored (its kernels): the codes
// unpacked from the row's words, times the group's scale plus its bias in T, or an FP4 code times
// its scale byte's value rounded to BF16.
void mlx_row_values(const MlxCarry& c, const MlxPiece& p, uint64_t cols, uint64_t r,
                    std::vector<uint8_t>& codes, float* out) {
  const uint64_t group = c.options.group, groups = cols / group;
  const uint32_t* words = &p.words[r * (cols * c.options.bits / 32)];
  if (c.options.mode != MlxMode::affine) {
    mlx_fp_values(c.options.mode, reinterpret_cast<const uint8_t*>(words), 0, cols,
                  &p.scale_bytes[r * groups], group, Dtype::BF16, out);
    return;
  }
  codes.resize(cols);
  mlx_unpack(reinterpret_cast<const std::byte*>(words), 0, cols,
             static_cast<unsigned>(c.options.bits), codes.data());
  for (uint64_t g = 0; g < groups; ++g)
    mlx_affine_values(&codes[g * group], group, p.scales[r * groups + g], p.biases[r * groups + g],
                      c.scale_dtype, out + g * group);
}

}  // namespace

uint64_t mlx_affine_bits_within(uint64_t bits) {
  uint64_t out = 2;
  for (const uint64_t b : kMlxAffineBits)
    if (b <= bits) out = b;
  return out;
}

uint64_t scheme_bits(const QuantScheme& s) {
  return std::visit(
      [](const auto& o) -> uint64_t {
        using O = std::decay_t<decltype(o)>;
        if constexpr (requires { o.bits; })
          return o.bits;
        else if constexpr (std::is_same_v<O, LlmInt8Options> || std::is_same_v<O, Fp8Options>)
          return 8;
        else
          return 4;  // int4, bitsandbytes 4-bit, MXFP4, NVFP4
      },
      s.options());
}

std::vector<MlxStored> mlx_carry_tensors(std::string_view name, uint64_t rows, uint64_t cols,
                                         const MlxCarry& c) {
  const std::string base(name.substr(0, name.size() - std::string_view(".weight").size()));
  const Shape scales{rows, cols / c.options.group};
  if (c.compressed_tensors) {
    const bool nv = c.options.mode == MlxMode::nvfp4;
    std::vector<MlxStored> out = {
        {base + ".weight_packed", Dtype::U8, {rows, cols / 2}},
        {base + ".weight_scale", nv ? Dtype::F8_E4M3 : Dtype::U8, scales}};
    if (nv) out.push_back({base + ".weight_global_scale", Dtype::F32, {1}});
    return out;
  }
  std::vector<MlxStored> out = {{base + ".weight", Dtype::U32, {rows, cols * c.options.bits / 32}},
                                {base + ".scales", c.scale_dtype, scales}};
  if (c.options.mode == MlxMode::affine) out.push_back({base + ".biases", c.scale_dtype, scales});
  return out;
}

void write_mlx_rows(const MlxRowSource& src, std::string_view name, const MlxCarry& c, Writer& w,
                    TranscodeReport::Item& item, const std::function<void(uint64_t)>& done) {
  const uint64_t cols = src.cols, groups = cols / c.options.group;
  const uint64_t row_words = cols * c.options.bits / 32;
  const std::vector<MlxStored> stored = mlx_carry_tensors(name, src.rows, cols, c);
  const unsigned threads = thread_count(configured_threads());
  const uint64_t step = piece_rows(src.rows, cols, src.head_rows);
  std::vector<std::byte> bytes;
  std::vector<RowCheck> checks;
  MlxPiece p;  // kept across pieces: their pages are faulted in once
  const bool affine = c.options.mode == MlxMode::affine;
  double squares = 0;
  for (uint64_t r0 = 0; r0 < src.rows; r0 += step) {
    const uint64_t n = std::min(step, src.rows - r0);
    src.load(r0, n);
    p.words.resize(n * row_words);
    p.scales.resize(affine ? n * groups : 0);
    p.biases.resize(affine ? n * groups : 0);
    p.scale_bytes.resize(affine ? 0 : n * groups);
    checks.assign(n, {});
    // Each row on some core: the source's values, the row carried (or requantized) and packed,
    // then read back as MLX's decoder reads it and compared, while it is in cache.
    parallel_for(n, 1, 1, threads, [&](uint64_t b, uint64_t e) {
      std::vector<float> want(cols), got(cols);
      std::vector<uint8_t> codes;
      for (uint64_t j = b; j < e; ++j) {
        src.row(j, want, p, codes);
        if (!c.carried) requantize_row(want.data(), cols, c, j, p, codes, name);
        mlx_row_values(c, p, cols, j, codes, got.data());
        checks[j] = check_row(got.data(), want.data(), cols, c.carried);
        if (const auto k = checks[j].differs)
          throw Error(ErrorCode::format, Rule::quant, std::string(name), std::nullopt,
                      fmt::format("{} ({}) is not carried exactly: value [{}, {}] is {} in the "
                                  "source and {} in MLX's layout; nothing was written",
                                  name, src.type, r0 + j, *k, want[*k], got[*k]),
                      src.location);
      }
    });
    for (const RowCheck& check : checks) {  // in row order: the figures are the same every run
      item.zero_signs += check.zero_signs;
      squares += check.squares;
      item.max_abs_error = std::max(item.max_abs_error, check.max_abs);
    }
    w.append(stored[0].name, std::as_bytes(std::span(p.words)));
    if (affine) {
      bytes.resize(p.scales.size() * dtype_bits(c.scale_dtype) / 8);
      for (const auto& [tensor, values] :
           {std::pair(&stored[1], &p.scales), std::pair(&stored[2], &p.biases)}) {
        convert(Dtype::F32, std::as_bytes(std::span(*values)), c.scale_dtype, bytes,
                values->size());
        w.append(tensor->name, bytes);
      }
    } else {
      w.append(stored[1].name, std::as_bytes(std::span(p.scale_bytes)));
    }
    if (done) done(n * cols);
  }
  if (c.compressed_tensors && stored.size() == 3) {  // NVFP4's global scale: 1, as MLX's has none
    const float one = 1.0f;
    w.append(stored[2].name, std::as_bytes(std::span(&one, 1)));
  }
  item.source = src.type;
  item.target = c.compressed_tensors
                    ? fmt::format("compressed-tensors {}", mlx_mode_name(c.options.mode))
                    : QuantScheme(c.options).name();
  item.scale_dtype = c.scale_dtype;
  item.exact = c.carried;
  const uint64_t count = src.rows * cols;
  if (!c.carried && count) item.rmse = std::sqrt(squares / static_cast<double>(count));
}

std::string mlx_quantization_json(const std::vector<std::pair<std::string, MlxOptions>>& weights) {
  std::map<std::string, size_t> counts;  // by options, as their JSON text
  const auto json_of = [](const MlxOptions& o) {
    return fmt::format(R"({{"group_size": {}, "bits": {}, "mode": "{}"}})", o.group, o.bits,
                       mlx_mode_name(o.mode));
  };
  for (const auto& [name, o] : weights) ++counts[json_of(o)];
  if (counts.empty()) return {};
  const std::string common =
      std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  std::string body = common.substr(1, common.size() - 2);  // the members without braces
  for (const auto& [name, o] : weights)
    if (const std::string own = json_of(o); own != common)
      body += fmt::format(", {}: {}", quote_name(name.substr(0, name.size() - 7)), own);
  return "{" + body + "}";
}

}  // namespace tlio::detail
