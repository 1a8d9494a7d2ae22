#include "checkpoint/pickle.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

[[noreturn]] void bad(size_t at, std::string detail) {
  throw_format(Rule::pickle, {}, fmt::format("at byte {}: {}", at, detail), at);
}

// Appends code point `cp` to `out` as UTF-8.
void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<uint32_t> hex_value(std::string_view digits) {
  uint32_t v = 0;
  for (char c : digits) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= static_cast<uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
  }
  return v;
}

// Protocol 0 UNICODE: raw-unicode-escape (\uXXXX, \UXXXXXXXX; other bytes are Latin-1).
std::string raw_unicode_escape(std::string_view s, size_t at) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
      const size_t n = s[i + 1] == 'u' ? 4 : 8;
      const auto v = i + 2 + n <= s.size() ? hex_value(s.substr(i + 2, n)) : std::nullopt;
      if (!v || *v > 0x10FFFF) bad(at, "a malformed \\u escape in UNICODE");
      put_utf8(out, *v);
      i += 1 + n;
    } else {
      put_utf8(out, static_cast<unsigned char>(c));
    }
  }
  return out;
}

// Protocol 0 STRING: a quoted Python 2 repr; common escapes decoded.
std::string string_repr(std::string_view s, size_t at) {
  if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front())
    bad(at, "STRING is not quoted");
  s = s.substr(1, s.size() - 2);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      case 'x': {
        const auto v = i + 2 < s.size() ? hex_value(s.substr(i + 1, 2)) : std::nullopt;
        if (!v) bad(at, "a malformed \\x escape in STRING");
        out += static_cast<char>(*v);
        i += 2;
        break;
      }
      default:
        out += e;
    }
  }
  return out;
}

// Two's complement little-endian integer of n bytes, when it fits in 64 bits.
std::optional<int64_t> long_bytes(const std::byte* p, size_t n) {
  if (n == 0) return 0;
  const bool negative = std::to_integer<uint8_t>(p[n - 1]) & 0x80;
  // Bytes past the eighth must only extend the sign.
  for (size_t i = 8; i < n; ++i)
    if (std::to_integer<uint8_t>(p[i]) != (negative ? 0xFF : 0x00)) return std::nullopt;
  uint64_t v = 0;
  const size_t used = std::min<size_t>(n, 8);
  for (size_t i = 0; i < used; ++i) v |= uint64_t(std::to_integer<uint8_t>(p[i])) << (8 * i);
  if (used < 8 && negative) v |= ~uint64_t{0} << (8 * used);
  if (n > 8 && (static_cast<int64_t>(v) < 0) != negative) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> decimal(std::string_view s) {
  if (!s.empty() && s.back() == 'L') s.remove_suffix(1);  // protocol 0 LONG
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) negative = s[0] == '-', s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

}  // namespace

ValueId Pickle::make(PyKind kind) {
  if (values_.size() >= kMaxPickleValues)
    throw_format(Rule::pickle, {}, fmt::format("more than {} objects", kMaxPickleValues));
  values_.emplace_back().kind = kind;
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Pickle::make_integer(int64_t v) {
  ValueId id = make(PyKind::integer);
  values_[id].integer = v;
  return id;
}

ValueId Pickle::make_text(PyKind kind, std::string text) {
  ValueId id = make(kind);
  values_[id].text = std::move(text);
  return id;
}

ValueId Pickle::object(ValueId callable, ValueId args) {
  ValueId id = make(PyKind::object);
  values_[id].callable = callable;
  values_[id].args = args;
  return id;
}

ValueId Pickle::run(std::span<const std::byte> data, size_t start, PickleResolver& resolver,
                    size_t* end) {
  std::vector<ValueId> stack;
  std::vector<size_t> marks;
  std::unordered_map<uint64_t, ValueId> memo;
  size_t pos = start;
  size_t op_at = start;

  auto need = [&](size_t n) {
    if (n > data.size() - pos) bad(op_at, "the pickle ends inside an opcode");
  };
  auto take = [&](size_t n) -> const std::byte* {
    need(n);
    const std::byte* p = data.data() + pos;
    pos += n;
    return p;
  };
  auto uint_le = [&](size_t n) {
    const std::byte* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(std::to_integer<uint8_t>(p[i])) << (8 * i);
    return v;
  };
  auto line = [&]() -> std::string_view {
    const auto* first = reinterpret_cast<const char*>(data.data() + pos);
    const void* nl = std::memchr(first, '\n', data.size() - pos);
    if (!nl) bad(op_at, "a text argument has no end of line");
    const size_t n = static_cast<size_t>(static_cast<const char*>(nl) - first);
    pos += n + 1;
    return {first, n};
  };
  auto chars = [&](uint64_t n) {
    if (n > data.size() - pos) bad(op_at, fmt::format("a length of {} runs past the pickle", n));
    const auto* p = reinterpret_cast<const char*>(take(static_cast<size_t>(n)));
    return std::string(p, static_cast<size_t>(n));
  };
  auto push = [&](ValueId v) {
    if (stack.size() >= kMaxPickleStack)
      bad(op_at, fmt::format("the stack holds more than {} entries", kMaxPickleStack));
    stack.push_back(v);
  };
  auto floor = [&]() -> size_t { return marks.empty() ? 0 : marks.back(); };
  auto pop = [&]() {
    if (stack.size() <= floor()) bad(op_at, "pop from an empty stack");
    ValueId v = stack.back();
    stack.pop_back();
    return v;
  };
  auto top = [&]() -> ValueId {
    if (stack.size() <= floor()) bad(op_at, "the stack is empty");
    return stack.back();
  };
  // The items pushed since the last MARK, which is removed.
  auto pop_mark = [&]() {
    if (marks.empty()) bad(op_at, "no MARK to pop to");
    const size_t m = marks.back();
    marks.pop_back();
    std::vector<ValueId> items(stack.begin() + static_cast<ptrdiff_t>(m), stack.end());
    stack.resize(m);
    return items;
  };
  auto kind_of = [&](ValueId v) { return values_[v].kind; };
  auto put_memo = [&](uint64_t key, ValueId v) {
    // A pickler numbers memo entries 0, 1, 2, ... as it makes values, so an index far past the
    // values made is not a pickler's (and torch.load, whose memo is an array, cannot load it).
    if (key > 2 * uint64_t{values_.size()} + kMemoIndexSlack)
      bad(op_at, fmt::format("memo index {} lies far past the {} values made so far", key,
                             values_.size()));
    if (memo.size() >= kMaxPickleMemo && !memo.count(key))
      bad(op_at, fmt::format("the memo holds more than {} entries", kMaxPickleMemo));
    memo[key] = v;
  };
  auto get_memo = [&](uint64_t key) {
    auto it = memo.find(key);
    if (it == memo.end()) bad(op_at, fmt::format("memo entry {} was never stored", key));
    push(it->second);
  };
  auto tuple_of = [&](std::vector<ValueId> items) {
    ValueId t = make(PyKind::tuple);
    values_[t].items = std::move(items);
    return t;
  };
  auto add_pairs = [&](ValueId target, std::span<const ValueId> kv) {
    if (kv.size() % 2) bad(op_at, "SETITEMS with an odd number of items");
    const PyKind k = kind_of(target);
    if (k != PyKind::dict && k != PyKind::object)
      bad(op_at, "SETITEM on something that is not a dict");
    auto& pairs = values_[target].pairs;
    pairs.insert(pairs.end(), kv.begin(), kv.end());
  };
  auto add_items = [&](ValueId target, std::span<const ValueId> items, bool to_set) {
    const PyKind k = kind_of(target);
    if (to_set ? k != PyKind::set : (k != PyKind::list && k != PyKind::object))
      bad(op_at, to_set ? "ADDITEMS on something that is not a set"
                        : "APPEND on something that is not a list");
    auto& v = values_[target].items;
    v.insert(v.end(), items.begin(), items.end());
  };
  auto text_of = [&](ValueId v, const char* what) -> const std::string& {
    if (kind_of(v) != PyKind::text) bad(op_at, fmt::format("{} is not a string", what));
    return values_[v].text;
  };

  while (true) {
    op_at = pos;
    if (pos >= data.size()) bad(op_at, "the pickle ends without STOP");
    const auto op = static_cast<unsigned char>(std::to_integer<uint8_t>(data[pos++]));
    switch (op) {
      case 0x80: {  // PROTO
        const auto v = uint_le(1);
        if (v > 5) bad(op_at, fmt::format("protocol {} is newer than 5", v));
        break;
      }
      case 0x95:
        uint_le(8);
        break;     // FRAME: a length hint only
      case '.': {  // STOP
        ValueId result = pop();
        if (end) *end = pos;
        return result;
      }
      case '(':
        if (marks.size() >= kMaxPickleMarks)
          bad(op_at, fmt::format("more than {} open MARKs", kMaxPickleMarks));
        marks.push_back(stack.size());
        break;
      case '0':  // POP (the mark itself when nothing lies above it)
        if (stack.size() > floor())
          stack.pop_back();
        else
          pop_mark();
        break;
      case '1':
        pop_mark();
        break;  // POP_MARK
      case '2':
        push(top());
        break;  // DUP
      case 'N':
        push(make(PyKind::none));
        break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        ValueId v = make(PyKind::boolean);
        values_[v].integer = op == 0x88;
        push(v);
        break;
      }
      case 'I': {  // INT (text; 00/01 are False/True)
        const std::string_view s = line();
        if (s == "00" || s == "01") {
          ValueId v = make(PyKind::boolean);
          values_[v].integer = s == "01";
          push(v);
        } else if (auto v = decimal(s)) {
          push(make_integer(*v));
        } else {
          push(make(PyKind::big_integer));
        }
        break;
      }
      case 'L': {  // LONG (text)
        auto v = decimal(line());
        push(v ? make_integer(*v) : make(PyKind::big_integer));
        break;
      }
      case 'J':
        push(make_integer(static_cast<int32_t>(uint_le(4))));
        break;  // BININT
      case 'K':
        push(make_integer(static_cast<int64_t>(uint_le(1))));
        break;  // BININT1
      case 'M':
        push(make_integer(static_cast<int64_t>(uint_le(2))));
        break;  // BININT2
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4
        const uint64_t n = op == 0x8a ? uint_le(1) : uint_le(4);
        if (n > data.size() - pos) bad(op_at, "a LONG runs past the pickle");
        const std::byte* raw = take(static_cast<size_t>(n));
        if (const auto v = long_bytes(raw, static_cast<size_t>(n))) {
          push(make_integer(*v));
        } else {  // kept as its little-endian bytes (the legacy checkpoint magic is one)
          push(make_text(PyKind::big_integer,
                         std::string(reinterpret_cast<const char*>(raw), static_cast<size_t>(n))));
        }
        break;
      }
      case 'F': {  // FLOAT (text)
        const std::string s(line());
        char* stop = nullptr;
        const double d = std::strtod(s.c_str(), &stop);
        if (s.empty() || stop != s.c_str() + s.size()) bad(op_at, "FLOAT is not a number");
        ValueId v = make(PyKind::floating);
        values_[v].floating = d;
        push(v);
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const std::byte* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | std::to_integer<uint8_t>(p[i]);
        ValueId v = make(PyKind::floating);
        std::memcpy(&values_[v].floating, &bits, 8);
        push(v);
        break;
      }
      case 'S':
        push(make_text(PyKind::text, string_repr(line(), op_at)));
        break;  // STRING
      case 'V':
        push(make_text(PyKind::text, raw_unicode_escape(line(), op_at)));
        break;     // UNICODE
      case 'T': {  // BINSTRING: signed 32-bit length
        const auto n = static_cast<int32_t>(uint_le(4));
        if (n < 0) bad(op_at, "BINSTRING with a negative length");
        push(make_text(PyKind::text, chars(static_cast<uint64_t>(n))));
        break;
      }
      case 'U':
        push(make_text(PyKind::text, chars(uint_le(1))));
        break;  // SHORT_BINSTRING
      case 'X':
        push(make_text(PyKind::text, chars(uint_le(4))));
        break;  // BINUNICODE
      case 0x8c:
        push(make_text(PyKind::text, chars(uint_le(1))));
        break;  // SHORT_BINUNICODE
      case 0x8d:
        push(make_text(PyKind::text, chars(uint_le(8))));
        break;  // BINUNICODE8
      case 'B':
        push(make_text(PyKind::bytes, chars(uint_le(4))));
        break;  // BINBYTES
      case 'C':
        push(make_text(PyKind::bytes, chars(uint_le(1))));
        break;    // SHORT_BINBYTES
      case 0x8e:  // BINBYTES8
      case 0x96:
        push(make_text(PyKind::bytes, chars(uint_le(8))));
        break;  // BYTEARRAY8
      case 0x97:
        bad(op_at, "NEXT_BUFFER: out-of-band buffers are not given to this reader");
      case 0x98:
        top();
        break;  // READONLY_BUFFER: a flag on the top value
      case ')':
        push(make(PyKind::tuple));
        break;  // EMPTY_TUPLE
      case 't':
        push(tuple_of(pop_mark()));
        break;  // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        if (stack.size() < floor() + n) bad(op_at, "TUPLE1-3 with too few items");
        std::vector<ValueId> items(stack.end() - static_cast<ptrdiff_t>(n), stack.end());
        stack.resize(stack.size() - n);
        push(tuple_of(std::move(items)));
        break;
      }
      case ']':
        push(make(PyKind::list));
        break;     // EMPTY_LIST
      case 'l': {  // LIST
        ValueId l = make(PyKind::list);
        values_[l].items = pop_mark();
        push(l);
        break;
      }
      case 'a': {  // APPEND
        ValueId v = pop();
        add_items(top(), {&v, 1}, false);
        break;
      }
      case 'e': {  // APPENDS
        auto items = pop_mark();
        add_items(top(), items, false);
        break;
      }
      case '}':
        push(make(PyKind::dict));
        break;     // EMPTY_DICT
      case 'd': {  // DICT
        auto kv = pop_mark();
        ValueId d = make(PyKind::dict);
        add_pairs(d, kv);
        push(d);
        break;
      }
      case 's': {  // SETITEM
        ValueId v = pop(), k = pop();
        const ValueId kv[2] = {k, v};
        add_pairs(top(), kv);
        break;
      }
      case 'u': {  // SETITEMS
        auto kv = pop_mark();
        add_pairs(top(), kv);
        break;
      }
      case 0x8f:
        push(make(PyKind::set));
        break;      // EMPTY_SET
      case 0x90: {  // ADDITEMS
        auto items = pop_mark();
        add_items(top(), items, true);
        break;
      }
      case 0x91: {  // FROZENSET
        ValueId s = make(PyKind::set);
        values_[s].items = pop_mark();
        push(s);
        break;
      }
      case 'g':
        get_memo(decimal(line()).value_or(-1));
        break;  // GET
      case 'h':
        get_memo(uint_le(1));
        break;  // BINGET
      case 'j':
        get_memo(uint_le(4));
        break;     // LONG_BINGET
      case 'p': {  // PUT
        const auto key = decimal(line());
        if (!key || *key < 0) bad(op_at, "PUT with a bad index");
        put_memo(static_cast<uint64_t>(*key), top());
        break;
      }
      case 'q':
        put_memo(uint_le(1), top());
        break;  // BINPUT
      case 'r':
        put_memo(uint_le(4), top());
        break;  // LONG_BINPUT
      case 0x94:
        put_memo(memo.size(), top());
        break;     // MEMOIZE
      case 'c': {  // GLOBAL module\nname\n
        const std::string module(line());
        const std::string name(line());
        push(resolver.global(*this, module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        ValueId name = pop(), module = pop();
        const std::string m = text_of(module, "STACK_GLOBAL's module"),
                          n = text_of(name, "STACK_GLOBAL's name");
        push(resolver.global(*this, m, n));
        break;
      }
      case 'i': {  // INST module\nname\n, args since MARK
        const std::string module(line());
        const std::string name(line());
        ValueId cls = resolver.global(*this, module, name);
        ValueId args = tuple_of(pop_mark());
        push(resolver.call(*this, cls, args));
        break;
      }
      case 'o': {  // OBJ: MARK cls args...
        auto items = pop_mark();
        if (items.empty()) bad(op_at, "OBJ without a class");
        ValueId cls = items.front();
        items.erase(items.begin());
        push(resolver.call(*this, cls, tuple_of(std::move(items))));
        break;
      }
      case 'R': {  // REDUCE
        ValueId args = pop(), callable = pop();
        if (kind_of(args) != PyKind::tuple) bad(op_at, "REDUCE's arguments are not a tuple");
        push(resolver.call(*this, callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args): an instance, never a call
        ValueId args = pop(), cls = pop();
        push(object(cls, args));
        break;
      }
      case 0x92: {  // NEWOBJ_EX
        pop();      // kwargs
        ValueId args = pop(), cls = pop();
        push(object(cls, args));
        break;
      }
      case 'b': {  // BUILD: state for the object below
        ValueId state = pop();
        ValueId target = top();
        if (kind_of(target) == PyKind::object) values_[target].state = state;
        // Dicts, tensors and the like: torch's rebuilt objects ignore their state here.
        break;
      }
      case 'P':
        push(resolver.persistent(*this, make_text(PyKind::text, std::string(line()))));
        break;
      case 'Q':
        push(resolver.persistent(*this, pop()));
        break;  // BINPERSID
      case 0x82:
      case 0x83:
      case 0x84: {  // EXT1, EXT2, EXT4: a code in the loader's copyreg registry
        const uint64_t code = uint_le(op == 0x82 ? 1 : op == 0x83 ? 2 : 4);
        push(resolver.global(*this, "copyreg.extension", std::to_string(code)));
        break;
      }
      default:
        bad(op_at, fmt::format("unknown opcode 0x{:02x}", op));
    }
  }
}

}  // namespace tlio::detail
