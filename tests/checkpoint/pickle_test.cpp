// Tests for checkpoint/pickle.hpp: every opcode decodes to the values Python's pickle makes,
// the resolver sees every global however it is named, and each cap ends the run with an error.
#include "checkpoint/pickle.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// Globals become tagged text; calls become inert objects; persistent ids are kept as given.
struct RecordingResolver : PickleResolver {
  std::vector<std::string> globals;
  ValueId global(Pickle& p, std::string_view module, std::string_view name) override {
    globals.push_back(std::string(module) + "." + std::string(name));
    return p.make_text(PyKind::global, globals.back());
  }
  ValueId call(Pickle& p, ValueId callable, ValueId args) override {
    return p.object(callable, args);
  }
  ValueId persistent(Pickle& p, ValueId pid) override { return p.object(kNoValue, pid); }
};

std::string hex(std::string_view digits) {
  std::string out;
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(digits.substr(i, 2)), nullptr, 16));
  return out;
}

std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

ValueId run(Pickle& p, const std::string& s, RecordingResolver* r = nullptr) {
  RecordingResolver local;
  return p.run(bytes(s), 0, r ? *r : local);
}

Rule failure(const std::string& s, std::string* message = nullptr) {
  Pickle p;
  try {
    run(p, s);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.rule();
  }
  return Rule::none;
}

TEST(Pickle, Protocol2DictOfValues) {
  // pickle.dumps({'a': [1, -2, 3.5, None, True], 'b': (b'xy', 'é')}, protocol=2), by hand.
  const std::string s = hex(
      "80027d7100285801000000615d7101284b014afeffffff47400c0000000000004e8865580100000062430278795802000000c3a986752e");
  Pickle p;
  const ValueId root = run(p, s);
  ASSERT_EQ(p[root].kind, PyKind::dict);
  ASSERT_EQ(p[root].pairs.size(), 4u);
  const PyValue& list = p[p[root].pairs[1]];
  ASSERT_EQ(list.kind, PyKind::list);
  ASSERT_EQ(list.items.size(), 5u);
  EXPECT_EQ(p[list.items[0]].integer, 1);
  EXPECT_EQ(p[list.items[1]].integer, -2);
  EXPECT_EQ(p[list.items[2]].floating, 3.5);
  EXPECT_EQ(p[list.items[3]].kind, PyKind::none);
  EXPECT_EQ(p[list.items[4]].kind, PyKind::boolean);
  const PyValue& tuple = p[p[root].pairs[3]];
  ASSERT_EQ(tuple.items.size(), 2u);
  EXPECT_EQ(p[tuple.items[0]].kind, PyKind::bytes);
  EXPECT_EQ(p[tuple.items[0]].text, "xy");
  EXPECT_EQ(p[tuple.items[1]].text, "\xc3\xa9");
}

TEST(Pickle, Protocol0TextOpcodes) {
  // pickle.dumps({'k': [1, 2**70, 'caf\u00e9', 0.5]}, protocol=0)
  const std::string s =
      "(dp0\nVk\np1\n(lp2\nI1\naL1180591620717411303424L\naVcaf\\u00e9\np3\naF0.5\nas.";
  Pickle p;
  const ValueId root = run(p, s);
  const PyValue& list = p[p[root].pairs[1]];
  ASSERT_EQ(list.items.size(), 4u);
  EXPECT_EQ(p[list.items[0]].integer, 1);
  EXPECT_EQ(p[list.items[1]].kind, PyKind::big_integer);
  EXPECT_EQ(p[list.items[2]].text, "caf\xc3\xa9");
  EXPECT_EQ(p[list.items[3]].floating, 0.5);
}

TEST(Pickle, Protocol4FramesStackGlobalMemoize) {
  // pickle.dumps(collections.OrderedDict(a=1), protocol=4)
  const std::string s = hex(
      "80049529000000000000008c0b636f6c6c656374696f6e73948c0b4f726465726564446963749493942952948c0161944b01732e");
  Pickle p;
  RecordingResolver r;
  const ValueId root = run(p, s, &r);
  ASSERT_EQ(r.globals, std::vector<std::string>{"collections.OrderedDict"});
  EXPECT_EQ(p[root].kind, PyKind::object);
  EXPECT_EQ(p[root].pairs.size(), 2u);
}

TEST(Pickle, EveryRouteToAGlobalReachesTheResolver) {
  for (const std::string& s :
       {std::string("cos\nsystem\n."),                                // GLOBAL
        std::string("(S'x'\nios\nsystem\n."),                         // INST
        std::string("(cos\nsystem\nS'x'\no."),                        // OBJ
        std::string("\x80\x04\x8c\x02os\x8c\x06system\x93.", 16)}) {  // STACK_GLOBAL
    Pickle p;
    RecordingResolver r;
    run(p, s, &r);
    EXPECT_EQ(r.globals, std::vector<std::string>{"os.system"}) << s;
  }
}

TEST(Pickle, MalformedInputIsAnErrorWithItsOffset) {
  std::string message;
  EXPECT_EQ(failure("", &message), Rule::pickle);
  EXPECT_EQ(failure("\x80\x02K", &message), Rule::pickle);
  EXPECT_NE(message.find("at byte 2"), std::string::npos) << message;
  EXPECT_EQ(failure(hex("581000000073686f72742e"), &message),
            Rule::pickle);  // X: 16 bytes, 6 there
  EXPECT_NE(message.find("runs past"), std::string::npos) << message;
  EXPECT_EQ(failure("h\x03."), Rule::pickle);        // memo never stored
  EXPECT_EQ(failure("a."), Rule::pickle);            // APPEND on an empty stack
  EXPECT_EQ(failure("K\x01K\x02s."), Rule::pickle);  // SETITEM on an int
  EXPECT_EQ(failure("\x80\x06."), Rule::pickle);     // protocol 6
  EXPECT_EQ(failure("\xff."), Rule::pickle);
  EXPECT_EQ(failure("\x97."), Rule::pickle);  // NEXT_BUFFER
  EXPECT_EQ(failure(std::string(1, '\x8a') + "\x09" + std::string(9, '\xff')),
            Rule::pickle);  // ends in LONG1
}

TEST(Pickle, CapsEndTheRun) {
  std::string message;
  EXPECT_EQ(failure(std::string(kMaxPickleMarks + 1, '(') + ".", &message), Rule::pickle);
  EXPECT_NE(message.find("MARK"), std::string::npos);
  EXPECT_EQ(failure("N" + std::string(kMaxPickleStack, '2') + ".", &message), Rule::pickle);
  EXPECT_NE(message.find("stack"), std::string::npos);
  // 1 << 22 memo entries fit; one more does not (MEMOIZE of one value).
  EXPECT_EQ(failure("\x80\x04N" + std::string(kMaxPickleMemo + 1, '\x94') + ".", &message),
            Rule::pickle);
  EXPECT_NE(message.find("memo"), std::string::npos);
}

TEST(Pickle, SelfReferenceIsHarmless) {
  // l = []; l.append(l): the arena holds the cycle, nothing recurses.
  Pickle p;
  const ValueId root = run(p, hex("80025d71006800612e"));
  ASSERT_EQ(p[root].items.size(), 1u);
  EXPECT_EQ(p[root].items[0], root);
}

TEST(Pickle, RunsOneOfSeveralConcatenatedPickles) {
  const std::string s = "\x80\x02K\x07.\x80\x02K\x08.";
  Pickle p;
  RecordingResolver r;
  size_t end = 0;
  EXPECT_EQ(p[p.run(bytes(s), 0, r, &end)].integer, 7);
  EXPECT_EQ(end, 5u);
  EXPECT_EQ(p[p.run(bytes(s), end, r, &end)].integer, 8);
  EXPECT_EQ(end, s.size());
}

}  // namespace
}  // namespace tlio::detail
