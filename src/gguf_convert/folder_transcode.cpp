// gguf_convert/folder_transcode.cpp: a model folder's quantized weights in another folder layout.
// To MLX (transcode --to mlx from a folder): compressed-tensors' MXFP4, and NVFP4 with a global
// scale of 1, carried byte for byte (MLX's U32 words hold the bytes of their U8 codes, two codes
// a byte, the low nibble first; the E8M0 and E4M3 scale bytes are the same, and so is code 8, -0
// in both tables); FP8 (blocks, rows, a tensor, MXFP8) whose scales are powers of two as MLX's
// mxfp8, its E4M3 bytes as they are and each scale's exponent an E8M0 byte per 32 inputs; with
// `lossy`, every other form requantized as mx.quantize does; MLX's own weights and the plain
// tensors copied. To compressed-tensors: MLX's mxfp4 and nvfp4 Linear weights the other way (a
// global scale of 1), an embedding of theirs as BF16 (its values exactly: compressed-tensors
// quantizes Linear layers), compressed-tensors' own weights copied. Shard for shard, each row
// proven (mlx_rows.hpp), published as one set.
#include "gguf_convert/folder_transcode.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "common/checked.hpp"
#include "common/json_members.hpp"
#include "common/json_text.hpp"
#include "gguf_convert/carry_proof.hpp"
#include "gguf_convert/gguf_export_parts.hpp"
#include "gguf_convert/mlx_rows.hpp"
#include "model/folder_rewrite.hpp"
#include "quant/hub/hub_values.hpp"
#include "quant/mlx/mlx_layout.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

constexpr uint64_t kLossyGroup = 32;

// What becomes of one quantized weight.
struct Planned {
  const QuantizedWeight* w;
  MlxCarry carry;
  std::vector<uint8_t> fp8_exponents;  // FP8 to mxfp8: each scale's E8M0 byte, in its grid
  bool decoded = false;                // to compressed-tensors: written as BF16 instead
};

// An FP8 weight's scales as E8M0 bytes, when every one is a power of two MLX's mxfp8 holds
// (2^-127 .. 2^127) and each group of 32 inputs lies under one scale; nullopt with the reason
// otherwise.
std::optional<std::vector<uint8_t>> fp8_exponents(const TensorSet& set, const QuantizedWeight& w,
                                                  std::string& why) {
  const auto& o = std::get<Fp8Options>(w.scheme.options());
  if (w.shape.size() != 2 || w.shape[1] % kMxGroup != 0 ||
      (o.granularity == Fp8Granularity::block && o.block_cols % kMxGroup != 0)) {
    why = fmt::format("{}: its scales do not cover whole groups of 32 inputs", w.scheme.name());
    return std::nullopt;
  }
  std::vector<uint8_t> out;
  if (o.e8m0) {  // E8M0 already (MXFP8's own, or a block grid's ue8m0): 255 is NaN in both
    const TensorView v = set.view(w.stored.at(1));
    for (const std::byte b : v.bytes()) out.push_back(std::to_integer<uint8_t>(b));
    return out;
  }
  for (const float x : set.f32(w.stored.at(1))) {
    int e = 0;
    const float m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
    if (!(x > 0) || !std::isfinite(x) || m != 0.5f || e - 1 < -127 || e - 1 > 127) {
      why =
          fmt::format("{}: its scale {} is not a power of two in E8M0's range", w.scheme.name(), x);
      return std::nullopt;
    }
    out.push_back(static_cast<uint8_t>(e - 1 + 127));
  }
  return out;
}

// The E8M0 byte of the FP8 scale over input `c` of row `r` (its grid: one, one a row, or
// blocks).
uint8_t fp8_exponent(const QuantizedWeight& w, const std::vector<uint8_t>& exponents, uint64_t r,
                     uint64_t c) {
  const auto& o = std::get<Fp8Options>(w.scheme.options());
  switch (o.granularity) {
    case Fp8Granularity::tensor:
      return exponents[0];
    case Fp8Granularity::channel:
      return exponents[r];
    case Fp8Granularity::block:
      break;
  }
  const uint64_t grid_cols = (w.shape[1] + o.block_cols - 1) / o.block_cols;
  return exponents[r / o.block_rows * grid_cols + c / o.block_cols];
}

// A compressed-tensors FP4 weight's MLX mode, when its bytes are MLX's: codes [rows, cols / 2]
// U8 and a scale byte per group; NVFP4 only with a global scale of 1 (MLX's has none).
std::optional<MlxMode> carried_mode(const TensorSet& set, const QuantizedWeight& w,
                                    std::string& why) {
  const auto* mx = std::get_if<Mxfp4Options>(&w.scheme.options());
  const auto* nv = std::get_if<Nvfp4Options>(&w.scheme.options());
  if ((!mx && !nv) || set.at(w.stored.at(0)).shape.size() != 2 || w.shape.size() != 2) {
    why = fmt::format("{}: MLX's layout has no mode that computes its values", w.scheme.name());
    return std::nullopt;
  }
  const MlxMode mode = mx ? MlxMode::mxfp4 : MlxMode::nvfp4;
  if (w.shape[1] % mlx_mode_defaults(mode).group != 0) {  // compressed-tensors allows a part group
    why = fmt::format("rows of {} are not whole groups of {}", w.shape[1],
                      mlx_mode_defaults(mode).group);
    return std::nullopt;
  }
  if (mx) {
    if (!mx->transposed) return MlxMode::mxfp4;
    why = "gpt-oss's experts held stacked";
    return std::nullopt;
  }
  if (nv->modelopt) {
    why = "ModelOpt's NVFP4 (code 8 is +0, the scale times weight_scale_2)";
    return std::nullopt;
  }
  if (const float g = set.f32(w.stored.at(2)).at(0); g != 1.0f) {
    why = fmt::format("its global scale is {}: MLX's nvfp4 has none", g);
    return std::nullopt;
  }
  return MlxMode::nvfp4;
}

// To compressed-tensors: MLX's FP4 Linear weights carried (one mode for all: one config group),
// an FP4 embedding decoded; what is compressed-tensors' already copied; the rest refused.
std::vector<Planned> plan_compressed_tensors(const std::vector<QuantizedWeight>& weights,
                                             const std::string& where) {
  std::vector<Planned> out;
  std::vector<std::string> refused;
  std::optional<MlxMode> mode;
  for (const QuantizedWeight& w : weights) {
    const auto* o = std::get_if<MlxOptions>(&w.scheme.options());
    if (!o) continue;  // compressed-tensors' (or another form's): copied as it is
    const MlxOptions d = mlx_mode_defaults(o->mode);
    if (o->mode != MlxMode::mxfp4 && o->mode != MlxMode::nvfp4) {
      refused.push_back(
          fmt::format("{} ({}: no compressed-tensors layout tlio writes has its "
                      "arithmetic)",
                      w.name, w.scheme.name()));
    } else if (w.shape.size() != 2) {
      refused.push_back(fmt::format("{} (a stack of {} dimensions)", w.name, w.shape.size()));
    } else if (w.name.find("embed") != std::string::npos) {
      out.push_back({&w, {d, Dtype::U8, true, true}, {}, true});
    } else if (mode && *mode != o->mode) {
      refused.push_back(fmt::format("{} ({} beside {}: one config group holds one mode)", w.name,
                                    mlx_mode_name(o->mode), mlx_mode_name(*mode)));
    } else {
      mode = o->mode;
      out.push_back({&w, {d, Dtype::U8, true, true}, {}, false});
    }
  }
  if (refused.empty()) return out;
  refuse_weights(refused, "compressed-tensors' layout", false, Rule::quant, where);
}

// compressed-tensors' quantization_config for `mode`'s weights, the Linear modules left plain
// ignored (each is named: a Linear without weight_packed would be read as compressed): the 2-D
// weights of the source that are no quantized weight's parts, embeddings aside.
std::string compressed_tensors_config(MlxMode mode, const TensorSet& set,
                                      const std::set<std::string, std::less<>>& quantized_parts) {
  std::vector<std::string> ignore;
  for (const TensorInfo* t : set.tensors())
    if (t->shape.size() == 2 && t->name.ends_with(".weight") &&
        !quantized_parts.contains(t->name) && t->name.find("embed") == std::string::npos)
      ignore.push_back(quote_name(t->name.substr(0, t->name.size() - 7)));
  const bool nv = mode == MlxMode::nvfp4;
  return fmt::format(
      R"({{"quant_method": "compressed-tensors", "format": "{}-pack-quantized", )"
      R"("quantization_status": "compressed", "config_groups": {{"group_0": {{"targets": ["Linear"], )"
      R"("weights": {{"num_bits": 4, "type": "float", "symmetric": true, "group_size": {}, )"
      R"("strategy": "{}", "dynamic": false}}}}}}, "ignore": [{}]}})",
      mlx_mode_name(mode), nv ? 16 : 32, nv ? "tensor_group" : "group", fmt::join(ignore, ", "));
}

std::vector<Planned> plan(const TensorSet& set, const std::vector<QuantizedWeight>& weights,
                          const TranscodeOptions& options, const std::string& where) {
  std::vector<Planned> out;
  std::vector<std::string> refused;
  for (const QuantizedWeight& w : weights) {
    if (w.scheme.kind() == SchemeKind::mlx) continue;  // MLX's already: copied
    std::string why;
    if (w.scheme.kind() == SchemeKind::fp8) {
      if (std::optional<std::vector<uint8_t>> exponents = fp8_exponents(set, w, why)) {
        out.push_back(
            {&w, {mlx_mode_defaults(MlxMode::mxfp8), Dtype::U8, true}, std::move(*exponents)});
        continue;
      }
    } else if (const std::optional<MlxMode> mode = carried_mode(set, w, why)) {
      out.push_back({&w, {mlx_mode_defaults(*mode), Dtype::U8, true}, {}});
      continue;
    }
    if (options.lossy && w.shape.size() == 2 && w.shape[1] % kLossyGroup == 0) {
      out.push_back({&w,
                     {{MlxMode::affine, mlx_affine_bits_within(scheme_bits(w.scheme)), kLossyGroup},
                      options.dtype,
                      false},
                     {}});
    } else {
      refused.push_back(fmt::format("{} ({})", w.name, why.empty() ? "rows of no whole 32s" : why));
    }
  }
  if (refused.empty()) return out;
  refuse_weights(refused, "MLX's layout", true, Rule::quant, where);
}

// The rows of one weight: its values by its scheme's decoder and, carried, its codes' and scale
// bytes as they are.
MlxRowSource rows_of(const FolderSource& source, const Planned& p, const QuantizedReader& decoded) {
  const QuantizedWeight& w = *p.w;
  const uint64_t cols = w.shape[1], groups = cols / p.carry.options.group;
  MlxRowSource rows{w.shape[0], cols, 0, w.scheme.name(), source.where.name(), {}, {}};
  const std::span<const File> files = source.weights.files;
  const auto [codes_file, codes] = stored_tensor(files, w.stored.at(0));
  const auto [scales_file, scales] = stored_tensor(files, w.stored.at(1));
  auto first = std::make_shared<uint64_t>(0);
  rows.load = [first](uint64_t r0, uint64_t) { *first = r0; };
  const uint64_t row_bytes = cols * p.carry.options.bits / 8;  // codes: FP4 two a byte, FP8 one
  rows.row = [&, first, codes_file = codes_file, codes = codes, scales_file = scales_file,
              scales = scales, cols, groups, row_bytes](uint64_t j, std::span<float> values,
                                                        MlxPiece& piece, std::vector<uint8_t>&) {
    const uint64_t r = *first + j;
    decoded.read(r * cols, cols, Dtype::F32, std::as_writable_bytes(values));
    if (!p.carry.carried) return;
    thread_local std::vector<std::byte> code_scratch, scale_scratch;
    const auto c = data_bytes(*codes_file, codes->begin + r * row_bytes, row_bytes, code_scratch);
    std::memcpy(&piece.words[j * (row_bytes / 4)], c.data(), c.size());
    uint8_t* to = &piece.scale_bytes[j * groups];
    if (p.carry.options.mode != MlxMode::mxfp8) {
      const auto s = data_bytes(*scales_file, scales->begin + r * groups, groups, scale_scratch);
      std::memcpy(to, s.data(), s.size());
      return;
    }
    for (uint64_t g = 0; g < groups; ++g) to[g] = fp8_exponent(*p.w, p.fp8_exponents, r, g * 32);
  };
  return rows;
}

}  // namespace

TranscodeReport folder_transcode(const std::string& src, const std::string& out,
                                 const TranscodeOptions& options) {
  const FolderSource source(Location::parse(src), options.open);
  const TensorSet& set = *source.set;
  const std::vector<QuantizedWeight> weights = find_quantized_weights(set);
  const bool to_mlx = options.to == TranscodeTarget::mlx;
  const std::vector<Planned> planned = to_mlx
                                           ? plan(set, weights, options, source.where.name())
                                           : plan_compressed_tensors(weights, source.where.name());
  std::set<std::string, std::less<>> dropped;  // the transcoded weights' parts
  for (const Planned& p : planned) dropped.insert(p.w->stored.begin(), p.w->stored.end());
  // The quantization config the output gets (config.json's, and each file's metadata for MLX).
  std::string config;
  if (to_mlx) {
    std::vector<std::pair<std::string, MlxOptions>> configs;  // every MLX weight of the output
    for (const QuantizedWeight& w : weights)
      if (w.scheme.kind() == SchemeKind::mlx)
        configs.emplace_back(w.name, std::get<MlxOptions>(w.scheme.options()));
    for (const Planned& p : planned) configs.emplace_back(p.w->name, p.carry.options);
    config = mlx_quantization_json(configs);
  } else if (const auto carried = std::find_if(planned.begin(), planned.end(),
                                               [](const Planned& p) { return !p.decoded; });
             carried != planned.end()) {
    std::set<std::string, std::less<>> quantized_parts;  // every quantized weight's, as stored
    for (const QuantizedWeight& w : weights)
      quantized_parts.insert(w.stored.begin(), w.stored.end());
    config = compressed_tensors_config(carried->carry.options.mode, set, quantized_parts);
  }

  TranscodeReport report;
  FolderRewrite how;
  std::set<std::string, std::less<>> mlx_parts;  // MLX's own weights' tensors, copied
  for (const QuantizedWeight& w : weights)
    if (w.scheme.kind() == SchemeKind::mlx) mlx_parts.insert(w.stored.begin(), w.stored.end());
  how.write_shard = [&](size_t i, Writer& w, const ProgressCallback& progress) {
    const File& shard = source.weights.files[i];
    Metadata meta = shard.metadata();
    if (to_mlx) {
      meta["format"] = "mlx";
      meta["quantization_config"] = config;
    } else {  // transformers' format; no MLX config left in the file
      meta["format"] = "pt";
      meta.erase("quantization_config");
    }
    w.set_metadata(meta);
    std::vector<std::string_view> kept;
    for (const TensorInfo& t : shard.tensors())
      if (!dropped.contains(t.name)) {
        w.declare(t.name, t.dtype, t.shape);
        kept.push_back(t.name);
        report.plain += !mlx_parts.contains(t.name);
      }
    std::vector<const Planned*> here;  // written into this shard: its first part's
    for (const Planned& p : planned)
      if (shard.header().find(p.w->stored.front())) {
        here.push_back(&p);
        if (p.decoded) {
          w.declare(p.w->name, Dtype::BF16, p.w->shape);
          continue;
        }
        for (auto& [name, dtype, shape] :
             mlx_carry_tensors(p.w->name, p.w->shape[0], p.w->shape[1], p.carry))
          w.declare(name, dtype, shape);
      }
    // Progress in output bytes: the copies', then each weight's rows' (as a share of its bytes).
    uint64_t total = 0, done = 0;
    for (const TensorInfo& t : w.layout()) total += t.byte_size();
    const auto tick = [&](uint64_t bytes) {
      done += bytes;
      if (progress) progress(done, total);
    };
    w.copy_many_from(shard, kept, {}, tick);
    for (const Planned* p : here) {
      if (p->decoded) {  // its values exactly: FP4 codes times powers of two or E4M3 fit BF16
        write_decoded(set, *p->w, Dtype::BF16, w, p->w->name, tick);
        ++report.plain;
        continue;
      }
      const QuantizedReader decoded(source.weights.files, *p->w);
      TranscodeReport::Item& item = report.items.emplace_back();
      item.name = p->w->name;
      uint64_t bytes = 0;
      for (auto& [name, dtype, shape] :
           mlx_carry_tensors(p->w->name, p->w->shape[0], p->w->shape[1], p->carry))
        bytes += tensor_size(dtype_bits(dtype), shape).bytes;
      const uint64_t elements = p->w->shape[0] * p->w->shape[1];
      write_mlx_rows(rows_of(source, *p, decoded), p->w->name, p->carry, w, item,
                     [&](uint64_t n) { tick(elements ? bytes * n / elements : 0); });
    }
    report.bytes_out += total;
  };
  how.progress = options.progress;
  how.edit_config = [&](const std::string& text, const std::string& name) {
    const std::optional<std::string> value =  // none when nothing is quantized
        config.empty() ? std::nullopt : std::optional(config);
    const std::string edited =
        set_json_member(text, "quantization_config", value, name, Rule::model);
    return set_json_member(edited, "quantization", to_mlx ? value : std::nullopt, name,
                           Rule::model);
  };
  how.restart = [&] { report = {}; };
  report.files = rewrite_folder(source, Location::parse(out), how);
  report.bytes_in = source.data_bytes;
  return report;
}

}  // namespace tlio::detail
