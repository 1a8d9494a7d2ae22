// gguf/ggml_quantize_kernels.cpp: see ggml_quantize_kernels.hpp.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "gguf/ggml_quantize_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include "gguf/ggml_quantize_kernels.hpp"

#include <cmath>

#include "tlio/convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace tlio::detail {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// quantize_row_q8_0_ref: amax = max |x|, d = amax / 127, id = 1 / d (0 for d = 0), the fp16 of
// d, then roundf(x * id) (half away from zero) as int8.
void Q8_0Blocks(const float* x, size_t blocks, uint8_t* out,
                void (*scalar_block)(const float*, uint8_t*)) {
  size_t b = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t lanes = hn::Lanes(df);
  if (lanes <= 32 && 32 % lanes == 0) {
    const auto half = hn::Set(df, 0.5f), one = hn::Set(df, 1.0f);
    for (; b < blocks; ++b) {
      const float* v = x + b * 32;
      uint8_t* o = out + b * 34;
      auto amax = hn::Zero(df);
      auto finite = hn::IsFinite(hn::LoadU(df, v));
      for (size_t j = 0; j < 32; j += lanes) {
        const auto xv = hn::LoadU(df, v + j);
        finite = hn::And(finite, hn::IsFinite(xv));
        amax = hn::Max(amax, hn::Abs(xv));
      }
      if (!hn::AllTrue(df, finite)) {
        scalar_block(v, o);
        continue;
      }
      const float d = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      if (!std::isfinite(id)) {  // d so small that 1 / d overflows: the scalar step's rule
        scalar_block(v, o);
        continue;
      }
      const uint16_t h = f32_to_f16(d);
      o[0] = static_cast<uint8_t>(h);
      o[1] = static_cast<uint8_t>(h >> 8);
      const auto ids = hn::Set(df, id);
      for (size_t j = 0; j < 32; j += lanes) {
        const auto p = hn::Mul(hn::LoadU(df, v + j), ids);
        // roundf: the integer part, one more away from zero when the rest is at least a half
        // (p - trunc(p) is exact; |p| <= 127 here, the block and 1 / d being finite).
        const auto t = hn::Trunc(p);
        const auto away = hn::Ge(hn::Abs(hn::Sub(p, t)), half);
        const auto r = hn::IfThenElse(away, hn::Add(t, hn::CopySign(one, p)), t);
        hn::StoreU(hn::DemoteTo(di8, hn::ConvertTo(di, r)), di8,
                   reinterpret_cast<int8_t*>(o + 2 + j));
      }
    }
  }
#endif
  for (; b < blocks; ++b) scalar_block(x + b * 32, out + b * 34);
}

}  // namespace HWY_NAMESPACE
}  // namespace tlio::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tlio::detail {

HWY_EXPORT(Q8_0Blocks);

void q8_0_blocks(const float* x, size_t blocks, uint8_t* out,
                 void (*scalar_block)(const float*, uint8_t*)) {
  HWY_DYNAMIC_DISPATCH(Q8_0Blocks)(x, blocks, out, scalar_block);
}

}  // namespace tlio::detail
#endif
