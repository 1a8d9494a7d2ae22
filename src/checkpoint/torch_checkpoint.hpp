// checkpoint/torch_checkpoint.hpp: the checkpoint reader on bytes in memory, for the fuzz
// targets (the public API in tlio/checkpoint.hpp takes paths).
#pragma once

#include <cstddef>
#include <span>

#include "tlio/checkpoint.hpp"

namespace tlio::detail {

/// read_checkpoint of a checkpoint held in memory: container, pickles, names, views and every
/// storage checked; nothing written.
CheckpointContents read_checkpoint_bytes(std::span<const std::byte> bytes,
                                         const ImportOptions& options);

/// One pickle decoded as a checkpoint's data.pkl and walked (no storages are looked up).
CheckpointContents read_data_pickle(std::span<const std::byte> pickle);

}  // namespace tlio::detail
