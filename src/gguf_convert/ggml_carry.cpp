// gguf_convert/ggml_carry.cpp: a folder's quantized weights as ggml's blocks (ggml_carry.hpp).
#include "gguf_convert/ggml_carry.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/parallel.hpp"
#include "gguf_convert/carry_proof.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_mix.hpp"
#include "gguf_convert/mlx_rows.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

namespace {

// Where the codes and scale bytes of an FP4 weight are: [rows, cols / 2] bytes of codes (element
// 2i in byte i's low nibble: compressed-tensors' U8, MLX's U32 words), [rows, groups] bytes.
struct Fp4Source {
  const File* codes_file;
  const TensorInfo* codes;
  const File* scales_file;
  const TensorInfo* scales;
};

Fp4Source fp4_source(std::span<const File> files, const QuantizedWeight& w) {
  const auto [cf, c] = stored_tensor(files, w.stored.at(0));
  const auto [sf, s] = stored_tensor(files, w.stored.at(1));
  return {cf, c, sf, s};
}

// One row of an FP4 weight as ggml's blocks: MXFP4 (per 32: the E8M0 byte, then the codes in
// ggml's order) or NVFP4 (per 64: four E4M3 bytes, then per 16 values 8 bytes, code j in byte j's
// low nibble and j + 8 in its high one). Codes are carried as they are: code 8, -0 in the
// source's table, is ggml's +0.
void fp4_row_to_ggml(const Fp4Source& src, uint32_t type, uint64_t row, uint64_t cols,
                     std::byte* out, std::vector<std::byte>& code_scratch,
                     std::vector<std::byte>& scale_scratch) {
  const bool nv = type == ggml_id(GgmlTypeId::NVFP4);
  const uint64_t group = nv ? 16 : 32, groups = cols / group;
  const auto codes =
      data_bytes(*src.codes_file, src.codes->begin + row * (cols / 2), cols / 2, code_scratch);
  const auto scales =
      data_bytes(*src.scales_file, src.scales->begin + row * groups, groups, scale_scratch);
  if (!nv) {
    for (uint64_t k = 0; k < groups; ++k, out += 17) {
      out[0] = scales[k];
      mxfp4_to_ggml(&codes[16 * k], out + 1);
    }
    return;
  }
  for (uint64_t k = 0; k < groups / 4; ++k, out += 36)
    for (uint64_t s = 0; s < 4; ++s) {
      out[s] = scales[4 * k + s];
      const std::byte* in = &codes[(4 * k + s) * 8];  // 16 codes, two a byte
      const auto code = [&](uint64_t j) {
        return std::to_integer<uint8_t>(in[j / 2] >> (j % 2 * 4)) & 0xF;
      };
      for (uint64_t j = 0; j < 8; ++j)
        out[4 + 8 * s + j] = std::byte(static_cast<uint8_t>(code(j) | code(j + 8) << 4));
    }
}

}  // namespace

std::optional<uint32_t> ggml_carry_type(std::span<const File> files, const QuantizedWeight& w,
                                        std::string& refusal) {
  const std::string scheme = w.scheme.name();
  refusal.clear();
  const auto refuse = [&](std::string why) -> std::optional<uint32_t> {
    refusal = std::move(why);
    return std::nullopt;
  };
  if (w.shape.size() != 2)
    return refuse(fmt::format("{} of {} dimensions", scheme, w.shape.size()));
  const uint64_t cols = w.shape[1];
  const auto* mlx = std::get_if<MlxOptions>(&w.scheme.options());
  const auto* mx = std::get_if<Mxfp4Options>(&w.scheme.options());
  const auto* nv = std::get_if<Nvfp4Options>(&w.scheme.options());
  const bool ct_codes =
      (mx || nv) && stored_tensor(files, w.stored.at(0)).second->shape.size() == 2;
  if ((mlx && mlx->mode == MlxMode::mxfp4) || (mx && !mx->transposed && ct_codes)) {
    if (cols % 32 != 0)  // compressed-tensors allows a part group
      return refuse(fmt::format("rows of {} are not whole MXFP4 blocks of 32", cols));
    return ggml_id(GgmlTypeId::MXFP4);
  }
  if ((mlx && mlx->mode == MlxMode::nvfp4) || (nv && !nv->modelopt && ct_codes)) {
    if (cols % 64 != 0)
      return refuse(fmt::format("rows of {} are not whole NVFP4 blocks of 64", cols));
    if (nv) {
      const auto [f, global] = stored_tensor(files, w.stored.at(2));
      if (const float g = read_f32(*f, global->name).at(0); g != 1.0f)
        return refuse(fmt::format("its global scale is {}: ggml's NVFP4 has none", g));
    }
    return ggml_id(GgmlTypeId::NVFP4);
  }
  return refuse(fmt::format("{}: no ggml type computes its values", scheme));
}

uint32_t ggml_lossy_type(const QuantizedWeight& w) {
  constexpr GgmlTypeId kByBits[] = {GgmlTypeId::Q2_K, GgmlTypeId::Q2_K, GgmlTypeId::Q2_K,
                                    GgmlTypeId::Q3_K, GgmlTypeId::Q4_K, GgmlTypeId::Q5_K,
                                    GgmlTypeId::Q6_K, GgmlTypeId::Q6_K, GgmlTypeId::Q8_0};
  const uint64_t bits = std::min<uint64_t>(scheme_bits(w.scheme), 8);
  return gguf_row_fallback(ggml_id(kByBits[bits]), w.shape.back());
}

uint64_t write_carried_part(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                            PiecePass& pass, const std::function<void(uint64_t)>& piece_done) {
  const QuantizedWeight& w = *part.quantized;
  const QuantizedReader decoded(pass.files, w);
  const uint64_t rows = w.shape[0], cols = w.shape[1];
  const uint64_t hd = p.permute_heads ? rows / p.permute_heads : 0;  // checked when planned
  const GgmlType type = *ggml_type(p.decl.type);
  const uint64_t row_bytes = cols / type.block * type.block_bytes;
  std::string why;
  const bool carried = ggml_carry_type(pass.files, w, why) == type.id;
  const std::optional<Fp4Source> fp4 =
      carried ? std::optional(fp4_source(pass.files, w)) : std::nullopt;
  TranscodeReport::Item& item = pass.carried->items.emplace_back();
  item.name = w.name;  // the Hugging Face name: an expert stack has one item per expert
  std::vector<RowCheck> checks;
  double squares = 0;
  const uint64_t step = piece_rows(rows, cols, hd);
  for (uint64_t r = 0; r < rows; r += step) {
    const uint64_t n = std::min(step, rows - r);
    pass.encoded.resize(n * row_bytes);
    checks.assign(n, {});
    parallel_for(n, 1, 1, pass.threads, [&](uint64_t b, uint64_t e) {
      std::vector<float> want(cols), got(cols);
      std::vector<std::byte> code_scratch, scale_scratch;
      for (uint64_t o = b; o < e; ++o) {
        const uint64_t from = r + (hd ? hf_row_of_gguf_row(o, hd) : o);  // whole heads a piece
        decoded.read(from * cols, cols, Dtype::F32, std::as_writable_bytes(std::span(want)));
        const auto blocks = std::span(pass.encoded).subspan(o * row_bytes, row_bytes);
        if (fp4)
          fp4_row_to_ggml(*fp4, type.id, from, cols, blocks.data(), code_scratch, scale_scratch);
        else
          ggml_encode(type.id, want, blocks);
        ggml_decode(type.id, blocks, got);
        checks[o] = check_row(got.data(), want.data(), cols, carried);
        if (const auto k = checks[o].differs)
          throw Error(ErrorCode::format, Rule::gguf, w.name, std::nullopt,
                      fmt::format("{} ({}) is not carried exactly into {}: value [{}, {}] is {} "
                                  "in the source and {} in ggml's blocks; nothing was written",
                                  w.name, w.scheme.name(), type.name, from, *k, want[*k], got[*k]));
      }
    });
    for (const RowCheck& c : checks) {  // in row order: the same figures every run
      item.zero_signs += c.zero_signs;
      squares += c.squares;
      item.max_abs_error = std::max(item.max_abs_error, c.max_abs);
    }
    writer.append(pass.encoded);
    piece_done(n * cols);
  }
  item.source = w.scheme.name();
  item.target = std::string(type.name);
  item.scale_dtype = type.id == ggml_id(GgmlTypeId::MXFP4) || type.id == ggml_id(GgmlTypeId::NVFP4)
                         ? Dtype::U8
                         : Dtype::F16;
  item.exact = carried;
  if (!carried && rows * cols != 0)
    item.rmse = std::sqrt(squares / static_cast<double>(rows * cols));
  return w.stored_bytes;
}

}  // namespace tlio::detail
