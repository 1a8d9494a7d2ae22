// common/json_members.cpp: top-level members found by a scan of the text (strings and nesting
// only), after the document has been checked whole by JsonDoc.
#include "common/json_members.hpp"

#include <simdjson.h>

#include <vector>

#include "common/json_doc.hpp"
#include "common/json_text.hpp"

namespace tlio::detail {

namespace {

struct Member {
  size_t key_begin, value_begin, value_end;  // the key's opening quote, the value, just past it
  std::string key;                           // unescaped
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// Past the string whose opening quote is at i.
size_t skip_string(std::string_view s, size_t i) {
  for (++i; s[i] != '"'; ++i)
    if (s[i] == '\\') ++i;
  return i + 1;
}

// Past the value that starts at i (the document is valid JSON).
size_t skip_value(std::string_view s, size_t i) {
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i])) ++i;
    return i;
  }
  size_t depth = 0;
  for (;; ++i) {
    if (s[i] == '"') {
      i = skip_string(s, i) - 1;
    } else if (s[i] == '{' || s[i] == '[') {
      ++depth;
    } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
      return i + 1;
    }
  }
}

// A key's text ("..." with its quotes) as the string it stands for ("a\u005fb" is "a_b").
std::string unescaped(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos)
    return std::string(quoted.substr(1, quoted.size() - 2));
  simdjson::dom::parser parser;
  std::string_view value;
  if (parser.parse(simdjson::padded_string(quoted)).get_string().get(value))
    return {};  // checked already
  return std::string(value);
}

// The members of the root object, and where its closing brace is.
std::vector<Member> members(std::string_view s, size_t& close) {
  std::vector<Member> out;
  size_t i = skip_space(s, 0) + 1;  // past '{'
  for (;;) {
    i = skip_space(s, i);
    if (s[i] == '}') break;
    Member m{};
    m.key_begin = i;
    const size_t key_end = skip_string(s, i);
    m.key = unescaped(s.substr(i, key_end - i));
    m.value_begin = skip_space(s, skip_space(s, key_end) + 1);  // past ':'
    m.value_end = skip_value(s, m.value_begin);
    out.push_back(m);
    i = skip_space(s, m.value_end);
    if (s[i] == ',') ++i;
  }
  close = i;
  return out;
}

}  // namespace

std::string set_json_member(std::string_view json, std::string_view key,
                            const std::optional<std::string>& value, const std::string& source,
                            Rule rule) {
  { const JsonDoc check(json, source, rule); }  // valid, an object, no duplicate keys
  size_t close = 0;
  const std::vector<Member> all = members(json, close);
  std::string out(json);
  for (size_t k = 0; k < all.size(); ++k) {
    const Member& m = all[k];
    if (m.key != key) continue;
    if (value) return out.replace(m.value_begin, m.value_end - m.value_begin, *value);
    // From the end of the previous value (its comma goes too), or up to the next key.
    if (k > 0) return out.erase(all[k - 1].value_end, m.value_end - all[k - 1].value_end);
    const size_t end = all.size() > 1 ? all[1].key_begin : m.value_end;
    return out.erase(m.key_begin, end - m.key_begin);
  }
  if (!value) return out;
  std::string member;
  append_json_string(member, key);
  member += ": " + *value;
  if (all.empty()) return out.insert(close, member);
  // Indented as the last member is: the whitespace before its key.
  size_t indent = all.back().key_begin;
  while (indent > 0 && is_space(json[indent - 1])) --indent;
  const std::string_view space = json.substr(indent, all.back().key_begin - indent);
  return out.insert(all.back().value_end, "," + std::string(space) + member);
}

std::optional<std::string> json_member_text(std::string_view json, std::string_view key,
                                            const std::string& source, Rule rule) {
  { const JsonDoc check(json, source, rule); }
  size_t close = 0;
  for (const Member& m : members(json, close))
    if (m.key == key) return std::string(json.substr(m.value_begin, m.value_end - m.value_begin));
  return std::nullopt;
}

}  // namespace tlio::detail
