// checkpoint/torch_resolver.hpp: what the globals of a torch pickle mean (TorchResolver), and the
// storage and tensor records it makes of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "tlio/dtype.hpp"

namespace tlio::detail {

struct StorageRecord {
  std::string key;
  std::optional<Dtype> dtype;  // nullopt: unsupported storage type
  std::string type_name;
  uint64_t numel = 0;
  // Legacy storage views: elements [view_offset, view_offset + numel) of another storage.
  std::string root_key;
  uint64_t view_offset = 0;
};

struct TensorRecord {
  size_t storage = SIZE_MAX;   // SIZE_MAX for unsupported tensors
  std::optional<Dtype> dtype;  // nullopt: the storage's (v2) when supported
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
  std::string unsupported;  // why, for tensors tlio cannot write
};

/// The Dtype of torch's dtype `name` ("float32", "bfloat16", "long", ...); nullopt for one tlio
/// does not write or a name that is not a dtype.
std::optional<Dtype> torch_dtype_named(std::string_view name);

class TorchResolver : public detail::PickleResolver {
 public:
  std::vector<StorageRecord> storages;
  std::unordered_map<std::string, size_t> storage_by_key;
  std::vector<TensorRecord> tensors;

  ValueId global(Pickle& p, std::string_view module, std::string_view name) override;
  ValueId call(Pickle& p, ValueId callable, ValueId args) override;
  ValueId persistent(Pickle& p, ValueId pid) override;

 private:
  [[noreturn]] static void refused(const std::string& full);
  static bool is_text(const Pickle& p, ValueId v, std::string_view s);
  static int64_t integer(const Pickle& p, ValueId v, const char* what);
  static std::string text_or_int(const Pickle& p, ValueId v, const char* what);
  static std::vector<int64_t> int_tuple(const Pickle& p, ValueId v, const char* what);
  ValueId tensor_value(Pickle& p, size_t index);
  ValueId unsupported(Pickle& p, std::string why);

  ValueId call(Pickle& p, ValueId callable, ValueId args, int nesting);
};

}  // namespace tlio::detail
