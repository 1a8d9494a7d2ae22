// quant/hub/fp8_encoder.hpp: the FP8 scheme's writer (fp8_encoder.cpp).
#pragma once

#include <memory>

#include "quant/schemes.hpp"

namespace tlio::detail {

/// The encoder of fp8-block<B>x<B> and fp8-channel; nullptr for the FP8 forms tlio reads only
/// (per tensor, per group, MXFP8, rectangular blocks).
std::unique_ptr<WeightEncoder> fp8_encoder(const Fp8Options& options);

}  // namespace tlio::detail
