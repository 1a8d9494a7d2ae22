// gguf/ggml_quantize_kernels.hpp: ggml reference quantizers' inner loops on vectors, compiled by
// Highway once per x86 target and dispatched at run time, byte-identical with the scalar steps
// in ggml_quantize.cpp (the same float operations, one rounding each; the module is compiled
// with -ffp-contract=off).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tlio::detail {

/// Q8_0 blocks (32 values each) of `blocks` * 32 values: the finite blocks on vectors, each
/// other block, and a block whose scale is so small that 1 / d overflows, by `scalar_block`
/// (ggml's order of comparisons decides which NaN or infinity its scale keeps, and a non-finite
/// product is given the code ggml's x86 build writes).
void q8_0_blocks(const float* x, size_t blocks, uint8_t* out,
                 void (*scalar_block)(const float*, uint8_t*));

}  // namespace tlio::detail
