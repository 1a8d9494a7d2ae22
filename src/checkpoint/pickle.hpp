// checkpoint/pickle.hpp: a pickle reader that runs nothing. It decodes every opcode of
// protocols 0-5 into values in an arena (so shared and cyclic references cost nothing to free
// and nothing recurses), and leaves what globals mean to a Resolver: torch's reader allowlists
// the callables that rebuild tensors and turns other classes into inert objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tlio::detail {

/// Caps on what one pickle may build, each with its own error.
inline constexpr size_t kMaxPickleValues = size_t{1} << 24;  // values created
inline constexpr size_t kMaxPickleStack = size_t{1} << 20;   // stack entries
inline constexpr size_t kMaxPickleMarks = size_t{1} << 16;   // open MARKs
inline constexpr size_t kMaxPickleMemo = size_t{1} << 22;    // memo entries
inline constexpr uint64_t kMemoIndexSlack =
    1024;  // memo indexes past 2 x values made + this: refused

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = UINT32_MAX;

enum class PyKind : uint8_t {
  none,
  boolean,      // integer: 0 or 1
  integer,      // integer
  big_integer,  // too large for 64 bits: text holds LONG1/LONG4's bytes (else nothing)
  floating,     // floating
  text,         // text (UTF-8 as decoded)
  bytes,        // text holds the bytes
  tuple,        // items
  list,         // items
  set,          // items
  dict,         // pairs: key, value, key, value, ...
  global,       // text: "module.name"; integer: the resolver's tag for it
  object,       // an instance of a class nothing rebuilds: callable, args, state, items, pairs
  resolved,     // something the resolver made (a storage, a tensor): integer is its tag/index
};

struct PyValue {
  PyKind kind = PyKind::none;
  int64_t integer = 0;
  double floating = 0;
  std::string text;
  std::vector<ValueId> items;
  std::vector<ValueId> pairs;
  ValueId callable = kNoValue, args = kNoValue, state = kNoValue;
};

class Pickle;

/// What the globals of a pickle mean. The machine asks; the resolver may throw to refuse.
class PickleResolver {
 public:
  virtual ~PickleResolver() = default;
  /// GLOBAL, STACK_GLOBAL, INST, the class of OBJ/NEWOBJ: a value for module.name.
  virtual ValueId global(Pickle& p, std::string_view module, std::string_view name) = 0;
  /// REDUCE: callable(*args). The default for unknown callables is p.object(callable, args).
  virtual ValueId call(Pickle& p, ValueId callable, ValueId args) = 0;
  /// PERSID/BINPERSID: the object a persistent id stands for.
  virtual ValueId persistent(Pickle& p, ValueId pid) = 0;
};

class Pickle {
 public:
  /// Runs the opcodes of `data` from `start` to STOP. Returns the result; `end` gets the
  /// position after STOP. Error{format, Rule::pickle} with the byte offset for malformed input
  /// or a cap reached.
  ValueId run(std::span<const std::byte> data, size_t start, PickleResolver& resolver,
              size_t* end = nullptr);

  const PyValue& operator[](ValueId id) const { return values_[id]; }
  PyValue& operator[](ValueId id) { return values_[id]; }
  size_t size() const noexcept { return values_.size(); }

  ValueId make(PyKind kind);
  ValueId make_integer(int64_t v);
  ValueId make_text(PyKind kind, std::string text);
  /// An inert instance of `callable` built with `args`.
  ValueId object(ValueId callable, ValueId args);

 private:
  std::vector<PyValue> values_;
};

}  // namespace tlio::detail
