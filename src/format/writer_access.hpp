// format/writer_access.hpp: writers whose files are published as part of a set.
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/atomic_file.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

struct WriterAccess {
  /// Writer::to_file for a location already parsed.
  static Writer to_file(const Location& where);
  /// A writer to `where` whose commit() checks the file is complete and adds it to `set`, which
  /// publishes it with the set's other files. `defaults`: metadata entries the file gets where
  /// nothing set them (a model's weights: kModelMetadata).
  static Writer into_set(OutputSet& set, const Location& where, Metadata defaults = {});

  /// A writer that writes nothing: it records the metadata and tensors declared, and throws
  /// LayoutProbed when its layout would be fixed (the first write, or layout()), so that a
  /// step run into it stops before any data is made. What it recorded: probed_*.
  static Writer probe();
  static const Metadata& probed_metadata(const Writer& probe);
  /// A writer that takes every declaration and byte and keeps nothing (a job's unit runs a
  /// source shard whose other tensors belong to other units: routing() sends them here).
  static Writer sink();
  static const std::vector<TensorInfo>& probed_tensors(const Writer& probe);

  /// A writer whose tensors live in other writers (a folder re-sharded: one source shard's
  /// step writing into several output files): each name's writer, where it is declared already
  /// with the dtype and shape the step declares. Declaring a name not routed is an error;
  /// metadata is the targets' own (set_metadata is ignored); commit() checks that every routed
  /// tensor the step declared is whole and commits nothing.
  static Writer routing(std::unordered_map<std::string, Writer*> routes);
};

/// What every safetensors file of a model folder carries unless its metadata says otherwise:
/// transformers 4.x refuses weights without {"format": "pt"} (5.x and safetensors do not ask).
inline const Metadata kModelMetadata{{"format", "pt"}};

/// Thrown by a probe writer once the layout is known: not an error.
struct LayoutProbed {};

}  // namespace tlio::detail
