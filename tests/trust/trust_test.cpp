// Tests of hashes and model signatures (tlio/trust.hpp) and what they stand on: base64, ECDSA
// keys, the path order and the bundle reader. Python's test_trust_*.py check the same against
// hashlib, `cryptography` and an independent model-signing writer.
#include "tlio/trust.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <string>
#include <vector>

#include "io/digest.hpp"
#include "io/ecdsa.hpp"
#include "io/http.hpp"
#include "test_util.hpp"
#include "tlio/file.hpp"
#include "trust/hash.hpp"
#include "trust/model_signing.hpp"

namespace {

using namespace tlio;
using namespace tlio::detail;
using tlio::test::TempDir;

// Keys made for these tests with `openssl ecparam -genkey | openssl pkcs8 -topk8 -nocrypt`.
constexpr std::string_view kPrivate384 =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDD+Qpgp9KdWGpfEi69k\n"
    "8R865T8R6wjIUMEHuew8dES5r4qt96YK4acKjshQx/j50gWhZANiAAQMroi/lQiS\n"
    "7OcO2G3kCoA0jh/sR/6ubzrM3e7/+eedG2IFDX+kf+ymxJwUsAxkr3zXd0V/ll3J\n"
    "QxfsNUO03m807iWKjoKLIU/ketEtUXMoH8c1U6RSA5gqpqxqHXeYxdQ=\n"
    "-----END PRIVATE KEY-----\n";
constexpr std::string_view kPublic384 =
    "-----BEGIN PUBLIC KEY-----\n"
    "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEDK6Iv5UIkuznDtht5AqANI4f7Ef+rm86\n"
    "zN3u//nnnRtiBQ1/pH/spsScFLAMZK9813dFf5ZdyUMX7DVDtN5vNO4lio6CiyFP\n"
    "5HrRLVFzKB/HNVOkUgOYKqasah13mMXU\n"
    "-----END PUBLIC KEY-----\n";
// The P-256 public key of fuzz_signature.cpp: another key than kPrivate384's.
constexpr std::string_view kOtherPublic256 =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEAng6qhEdd5MMQfgkgt4fIyH047nJ\n"
    "OQTTfalDgYY7HZL882R4igLuYo4h6vocFs8C/pPWbkx/CwSy6OMyewX7Rg==\n"
    "-----END PUBLIC KEY-----\n";

void write_text(const std::filesystem::path& p, std::string_view text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool any_contains(const std::vector<std::string>& problems, std::string_view part) {
  for (const std::string& p : problems)
    if (p.find(part) != std::string::npos) return true;
  return false;
}

TEST(Base64, EncodesAndDecodesRfc4648Vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {{"", ""},
                                                                   {"f", "Zg=="},
                                                                   {"fo", "Zm8="},
                                                                   {"foo", "Zm9v"},
                                                                   {"foob", "Zm9vYg=="},
                                                                   {"fooba", "Zm9vYmE="},
                                                                   {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode({reinterpret_cast<const unsigned char*>(plain.data()), plain.size()}),
              encoded);
    std::vector<unsigned char> out;
    ASSERT_TRUE(base64_decode(encoded, out)) << encoded;
    EXPECT_EQ(std::string(out.begin(), out.end()), plain);
  }
}

TEST(Base64, RefusesWhatIsNotStrictBase64) {
  std::vector<unsigned char> out;
  for (std::string_view bad :
       {"Zg=", "Zg", "Z===", "Zg==Zg==", " Zg==", "Zg==\n", "Zm9v!", "=Zm9", "Zm=v"})
    EXPECT_FALSE(base64_decode(bad, out)) << bad;
}

TEST(EcKey, SignsAndVerifiesWithTheCurvesHash) {
  const EcKey priv = EcKey::private_from_pem(kPrivate384, "test key");
  const EcKey pub = EcKey::public_from_pem(kPublic384, "test key");
  EXPECT_EQ(priv.curve(), "P-384");
  EXPECT_EQ(pub.public_key_der(), priv.public_key_der());
  const std::vector<unsigned char> sig = priv.sign("message");
  EXPECT_TRUE(pub.verify("message", sig));
  EXPECT_FALSE(pub.verify("messagE", sig));
  EXPECT_FALSE(EcKey::public_from_pem(kOtherPublic256, "other").verify("message", sig));
}

TEST(EcKey, RefusesWhatIsNotAnEcKey) {
  try {
    (void)EcKey::public_from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                                 "k.pem");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("k.pem"), std::string::npos);
  }
  // A public key is no private key, and the message says which one signing needs.
  try {
    (void)EcKey::private_from_pem(kPublic384, "k.pem");
    ADD_FAILURE() << "a public key was taken for a private one";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a public key: signing needs the private key"),
              std::string::npos)
        << e.what();
  }
}

TEST(PathOrder, ComparesComponentByComponent) {
  // As model-signing sorts resources: "sub/x" comes before "sub-2" and "sub.txt".
  std::vector<std::string> names{"sub.txt", "sub-2", "sub/x", "a", "sub/a/b", "Z"};
  std::sort(names.begin(), names.end(), path_order);
  EXPECT_EQ(names, (std::vector<std::string>{"Z", "a", "sub/a/b", "sub/x", "sub-2", "sub.txt"}));
  EXPECT_FALSE(path_order("a", "a"));
}

TEST(FolderFiles, ListsFilesRecursivelyWithoutGitAndRefusesSpecialFiles) {
  TempDir dir;
  write_text(dir / "m/a.txt", "a");
  write_text(dir / "m/sub/b.txt", "b");
  write_text(dir / "m/.git/HEAD", "ref");
  write_text(dir / "m/.gitattributes", "x");
  std::filesystem::create_symlink("a.txt", dir / "m/link");
  EXPECT_EQ(folder_files((dir / "m").string()),
            (std::vector<std::string>{".gitattributes", "a.txt", "link", "sub/b.txt"}));
  EXPECT_THROW((void)folder_files((dir / "m").string(), false), Error);  // links are not followed
  ASSERT_EQ(::mkfifo((dir / "m/sub/fifo").c_str(), 0600), 0);
  try {
    (void)folder_files((dir / "m").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("fifo"), std::string::npos);
  }
  EXPECT_THROW((void)folder_files((dir / "missing").string()), Error);
}

TEST(HashFile, EqualsSha256OfTheBytes) {
  const auto path = tlio::test::data_dir() / "hf" / "worked_example.safetensors";
  const std::vector<std::byte> bytes = tlio::test::read_bytes(path);
  const std::string want = to_hex(sha256(std::span<const std::byte>(bytes)));
  const FileHash h = hash_file(path.string());
  EXPECT_EQ(h.sha256, want);
  EXPECT_EQ(h.size, bytes.size());
  EXPECT_TRUE(h.checked_against.empty());
  const File f = File::open(path);
  EXPECT_EQ(hash_file(f).sha256, want);
  EXPECT_EQ(check_sha256(f, upper(want)).sha256, want);
  try {
    (void)check_sha256(f, std::string(64, '0'));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::verification);
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos);
  }
  EXPECT_THROW((void)check_sha256(f, "abc"), Error);
}

TEST(HashFile, LargerThanOnePieceAndEmpty) {
  TempDir dir;
  std::string big(20u << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 2654435761u >> 13);
  write_text(dir / "big", big);
  write_text(dir / "empty", "");
  EXPECT_EQ(hash_file((dir / "big").string()).sha256, to_hex(sha256(big)));
  HashOptions direct;  // past the page cache, in pieces of windows read 16 at a time
  direct.open.backend = Backend::direct;
  EXPECT_EQ(hash_file((dir / "big").string(), direct).sha256, to_hex(sha256(big)));
  EXPECT_EQ(hash_file((dir / "empty").string()).sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(HashFiles, ReportsInOrderWithEachFailure) {
  TempDir dir;
  std::vector<std::string> locations;
  for (int i = 0; i < 6; ++i) {
    write_text(dir / ("f" + std::to_string(i)), std::string(static_cast<size_t>(i) * 1000, 'x'));
    locations.push_back((dir / ("f" + std::to_string(i))).string());
  }
  locations.insert(locations.begin() + 2, (dir / "missing").string());
  std::vector<size_t> order;
  size_t failed = 0;
  HashOptions o;
  o.threads = 3;
  hash_files(locations, o, [&](size_t i, const FileHash& h, const Error* e) {
    order.push_back(i);
    if (e) {
      ++failed;
      EXPECT_EQ(i, 2u);
      EXPECT_EQ(e->code(), ErrorCode::io);
    } else {
      EXPECT_EQ(h.sha256, to_hex(sha256(std::string(h.size, 'x'))));
    }
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(failed, 1u);
}

TEST(Http, KeepsTheLinkedEtagAcrossARedirect) {
  HttpResponse r;
  read_response_header("HTTP/1.1 302 Found\r\n", r);
  read_response_header("X-Linked-Etag: \"abc\"\r\n", r);
  read_response_header("HTTP/1.1 200 OK\r\n", r);
  read_response_header("ETag: \"def\"\r\n", r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.linked_etag, "\"abc\"");
  EXPECT_EQ(r.etag, "\"def\"");
}

TEST(ModelSigning, SignedFolderVerifiesAndEachChangeIsNamed) {
  TempDir dir;
  const auto key = dir / "key.pem", pub = dir / "key.pub", other = dir / "other.pub";
  write_text(key, kPrivate384);
  write_text(pub, kPublic384);
  write_text(other, kOtherPublic256);
  const auto m = dir / "model";
  write_text(m / "model.safetensors", "weights");
  write_text(m / "sub/config.json", "{}");
  write_text(m / ".git/config", "git");
  const std::string sig = sign_folder(m.string(), key.string());
  EXPECT_EQ(sig, (m / "model.sig").string());
  SignatureCheck c = verify_signature(m.string(), pub.string());
  EXPECT_EQ(c.files, 2u);
  EXPECT_EQ(c.key_hint.size(), 64u);

  // The hint is the SHA-256 of the public key's PEM text.
  EXPECT_EQ(c.key_hint, to_hex(sha256(kPublic384)));
  // The private key verifies too (by its public half).
  EXPECT_TRUE(check_signature(m.string(), key.string()).ok());

  // A wrong key: hint and signature.
  c = check_signature(m.string(), other.string());
  EXPECT_TRUE(any_contains(c.problems, "key hint"));
  EXPECT_TRUE(any_contains(c.problems, "does not verify"));

  write_text(m / "sub/config.json", "{ }");
  write_text(m / "added.txt", "new");
  std::filesystem::remove(m / "model.safetensors");
  c = check_signature(m.string(), pub.string());
  EXPECT_EQ(c.problems.size(), 3u);
  EXPECT_TRUE(any_contains(c.problems, "sub/config.json: its SHA-256"));
  EXPECT_TRUE(any_contains(c.problems, "added.txt: not in the signature"));
  EXPECT_TRUE(any_contains(c.problems, "model.safetensors: missing"));
  try {
    (void)verify_signature(m.string(), pub.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::verification);
    EXPECT_NE(std::string(e.what()).find("added.txt"), std::string::npos);
  }
}

TEST(ModelSigning, IgnorePathsAndASignatureElsewhere) {
  TempDir dir;
  write_text(dir / "key.pem", kPrivate384);
  write_text(dir / "key.pub", kPublic384);
  const auto m = dir / "model";
  write_text(m / "w.bin", "w");
  write_text(m / "cache/tmp", "t");
  SignOptions so;
  so.signature = (dir / "elsewhere.sig").string();
  so.ignore_paths = {"cache"};
  (void)sign_folder(m.string(), (dir / "key.pem").string(), so);
  write_text(m / "cache/tmp", "changed");
  VerifyOptions vo;
  vo.signature = so.signature;
  const SignatureCheck c = check_signature(m.string(), (dir / "key.pub").string(), vo);
  EXPECT_TRUE(c.ok()) << (c.problems.empty() ? "" : c.problems[0]);
  EXPECT_EQ(c.files, 1u);
}

TEST(ModelSigning, ReadsHostileBundlesAsProblems) {
  const EcKey key = EcKey::public_from_pem(kPublic384, "k");
  for (std::string_view text :
       {"", "[]", "{}", "{\"dsseEnvelope\":1}", "{\"dsseEnvelope\":{\"payload\":\"!!\"}}",
        "{\"dsseEnvelope\":{\"payload\":\"e30=\",\"signatures\":[{\"sig\":\"AAAA\"}]}}",
        "{\"dsseEnvelope\":{\"payload\":\"e30=\",\"signatures\":[]}}", "{\"a\":1,\"a\":2}"}) {
    const SignedStatement s = read_signature(text, "sig", key);
    EXPECT_FALSE(s.problems.empty()) << text;
  }
}

// A bundle over `statement`, signed with kPrivate384 (as a signer who lists what it likes).
std::string signed_bundle(const std::string& statement) {
  const EcKey key = EcKey::private_from_pem(kPrivate384, "test key");
  const std::string pae = "DSSEv1 28 application/vnd.in-toto+json " +
                          std::to_string(statement.size()) + " " + statement;
  const std::vector<unsigned char> sig = key.sign(pae);
  return "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\",\"dsseEnvelope\":{\"payload\":\"" +
         base64_encode(
             {reinterpret_cast<const unsigned char*>(statement.data()), statement.size()}) +
         "\",\"payloadType\":\"application/vnd.in-toto+json\",\"signatures\":[{\"sig\":\"" +
         base64_encode(sig) + "\"}]}}";
}

TEST(ModelSigning, KeepsTheFirstHundredProblemsAndCountsTheRest) {
  std::string resources;
  for (int i = 0; i < 500; ++i) resources += std::string(i ? "," : "") + "{}";
  const std::string statement = "{\"predicate\":{\"resources\":[" + resources + "]}}";
  const SignedStatement s =
      read_signature(signed_bundle(statement), "sig", EcKey::public_from_pem(kPublic384, "k"));
  EXPECT_TRUE(s.trusted);
  ASSERT_EQ(s.problems.size(), 101u);
  EXPECT_NE(s.problems.back().find("more problems"), std::string::npos) << s.problems.back();
}

TEST(ModelSigning, NamesWithControlCharactersAreQuoted) {
  // A name that would move a terminal's cursor to print a fake "OK" is shown JSON-quoted.
  TempDir dir;
  write_text(dir / "key.pub", kPublic384);
  write_text(dir / "model/w.bin", "w");
  const std::string digest(64, 'a');
  const std::string statement =
      "{\"predicate\":{\"resources\":[{\"name\":\"x\\u001b[2K\\rOK\",\"algorithm\":"
      "\"sha256\",\"digest\":\"" +
      digest + "\"}]}}";
  write_text(dir / "model.sig", signed_bundle(statement));
  VerifyOptions o;
  o.signature = (dir / "model.sig").string();
  const SignatureCheck c = check_signature((dir / "model").string(), (dir / "key.pub").string(), o);
  EXPECT_TRUE(any_contains(c.problems, "\"x\\u001b[2K\\rOK\": missing"));
  for (const std::string& p : c.problems) EXPECT_EQ(p.find('\x1b'), std::string::npos) << p;
}

TEST(ModelSigning, AnUnsignedStatementIsNotCompared) {
  TempDir dir;
  write_text(dir / "key.pem", kPrivate384);
  write_text(dir / "other.pub", kOtherPublic256);
  write_text(dir / "model/w.bin", "w");
  (void)sign_folder((dir / "model").string(), (dir / "key.pem").string());
  write_text(dir / "model/added", "x");
  const SignatureCheck c = check_signature((dir / "model").string(), (dir / "other.pub").string());
  EXPECT_FALSE(any_contains(c.problems, "added"));  // the files were not read
  EXPECT_TRUE(any_contains(c.problems, "does not verify"));
}

TEST(ModelSigning, NeverReplacesAFileThatIsNoSignature) {
  TempDir dir;
  write_text(dir / "key.pem", kPrivate384);
  write_text(dir / "model/w.bin", "w");
  SignOptions o;
  o.signature = (dir / "key.pem").string();  // a typo that would replace the private key
  EXPECT_THROW((void)sign_folder((dir / "model").string(), (dir / "key.pem").string(), o), Error);
  EXPECT_EQ(tlio::test::read_bytes(dir / "key.pem").size(), kPrivate384.size());
  o.signature.clear();
  o.ignore_paths = {"../elsewhere"};
  EXPECT_THROW((void)sign_folder((dir / "model").string(), (dir / "key.pem").string(), o), Error);
  o.ignore_paths.clear();
  (void)sign_folder((dir / "model").string(), (dir / "key.pem").string(), o);
  (void)sign_folder((dir / "model").string(), (dir / "key.pem").string(),
                    o);  // a signature is replaced
}

TEST(HashFile, PositionalReadsAndStreams) {
  TempDir dir;
  const std::string text(3u << 20, 'q');
  write_text(dir / "f", text);
  HashOptions o;
  o.open.backend = Backend::pread;
  EXPECT_EQ(hash_file((dir / "f").string(), o).sha256, to_hex(sha256(text)));
  const File f =
      File::open(tlio::test::data_dir() / "hf" / "worked_example.safetensors", {Backend::pread});
  EXPECT_EQ(hash_file(f).sha256, hash_file(f.name()).sha256);
  // A file whose size says 0 is read to its end; a device is refused.
  EXPECT_NE(hash_file("/proc/self/status").size, 0u);
  try {
    (void)hash_file("/dev/zero");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

}  // namespace
