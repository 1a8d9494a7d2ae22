// Tests for io/aws_sigv4, io/object_store_config, io/s3_client and io/hf_store without a server:
// SigV4 against the published AWS example, settings found as the AWS CLI and boto find them,
// S3 addresses and errors by kind, and hf:// read from a local cache made here. Requests
// against a real S3 server are python/tests/test_s3.py's.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <system_error>

#include "io/aws_sigv4.hpp"
#include "io/crypto_library.hpp"
#include "io/curl_library.hpp"
#include "io/digest.hpp"
#include "io/location.hpp"
#include "io/object_store_config.hpp"
#include "io/s3_client.hpp"
#include "io/store.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// Sets variables for one test and puts the previous values back.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : kAll) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(name);
    }
    for (const auto& [k, v] : vars) ::setenv(k, v, 1);
  }
  ~Env() {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k, v->c_str(), 1);
      else
        ::unsetenv(k);
    }
  }

 private:
  static constexpr const char* kAll[] = {"AWS_ACCESS_KEY_ID",
                                         "AWS_SECRET_ACCESS_KEY",
                                         "AWS_SESSION_TOKEN",
                                         "AWS_PROFILE",
                                         "AWS_DEFAULT_PROFILE",
                                         "AWS_REGION",
                                         "AWS_DEFAULT_REGION",
                                         "AWS_ENDPOINT_URL",
                                         "AWS_ENDPOINT_URL_S3",
                                         "AWS_CONFIG_FILE",
                                         "AWS_SHARED_CREDENTIALS_FILE",
                                         "AWS_NO_SIGN_REQUEST",
                                         "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
                                         "TLIO_S3_ADDRESSING_STYLE",
                                         "GOOGLE_ACCESS_KEY_ID",
                                         "GOOGLE_SECRET_ACCESS_KEY",
                                         "BOTO_CONFIG",
                                         "TLIO_GS_ENDPOINT_URL",
                                         "HOME",
                                         "HF_HOME",
                                         "HF_HUB_CACHE",
                                         "HF_HUB_OFFLINE",
                                         "HF_ENDPOINT",
                                         "HF_TOKEN"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

void write(const std::filesystem::path& p, std::string_view text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(SigV4, MatchesTheAwsDocumentationExample) {
  // "Example: GET Object" of the S3 API reference (Authenticating Requests: Using the
  // Authorization Header): the first 10 bytes of test.txt in examplebucket.
  const AwsCredentials credentials{"AKIAIOSFODNN7EXAMPLE",
                                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
  const AwsRequest request{.method = "GET",
                           .host = "examplebucket.s3.amazonaws.com",
                           .path = "/test.txt",
                           .headers = {{"Range", "bytes=0-9"}}};
  const auto when = std::chrono::system_clock::from_time_t(1369353600);  // 2013-05-24T00:00:00Z
  const std::vector<std::string> lines = aws_sign(request, credentials, "us-east-1", "s3", when);
  EXPECT_EQ(
      lines.back(),
      "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
      "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "x-amz-date: 20130524T000000Z"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)),
            lines.end());
  // A session token is sent and signed; the secret never appears in what is sent.
  const AwsCredentials with_token{credentials.access_key, credentials.secret_key, "TOKEN123"};
  const auto signed_lines = aws_sign(request, with_token, "us-east-1", "s3", when);
  EXPECT_NE(signed_lines.back().find("x-amz-security-token"), std::string::npos);
  for (const std::string& l : signed_lines)
    EXPECT_EQ(l.find(credentials.secret_key), std::string::npos) << l;
  EXPECT_TRUE(crypto_library_loaded());
}

TEST(SigV4, QueriesAreEncodedAndSorted) {
  EXPECT_EQ(aws_canonical_query({{"uploadId", "a b+c"}, {"partNumber", "2"}, {"uploads", ""}}),
            "partNumber=2&uploadId=a%20b%2Bc&uploads=");
  EXPECT_EQ(aws_uri_encode("models/llama 3/é~x.safetensors", true),
            "models/llama%203/%C3%A9~x.safetensors");
  EXPECT_EQ(aws_uri_encode("a/b", false), "a%2Fb");
}

TEST(Digest, Sha256OfKnownInputs) {
  EXPECT_EQ(to_hex(sha256(std::string_view())), kEmptySha256);
  EXPECT_EQ(to_hex(sha256(std::string_view("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 pieces;  // the same digest given in pieces
  pieces.update(std::string_view("a"));
  pieces.update(std::string_view("bc"));
  EXPECT_EQ(to_hex(pieces.finish()), to_hex(sha256(std::string_view("abc"))));
}

TEST(ObjectStoreConfig, IniFilesAsTheAwsCliReadsThem) {
  const IniFile ini = parse_ini(
      "# comment\n[default]\nregion = eu-west-1\ns3 =\n  addressing_style = path\n  endpoint_url = http://e\n"
      "\n[profile dev]  # a note\n; another\naws_access_key_id=AK\nREGION: us-west-2 \nignored line\n");
  EXPECT_EQ(ini.at("default").at("region"), "eu-west-1");
  EXPECT_EQ(ini.at("default").at("s3.addressing_style"), "path");
  EXPECT_EQ(ini.at("default").at("s3.endpoint_url"), "http://e");
  EXPECT_EQ(ini.at("profile dev").at("region"), "us-west-2");
  EXPECT_EQ(ini.at("profile dev").at("aws_access_key_id"), "AK");
}

TEST(ObjectStoreConfig, EnvironmentFirstThenProfiles) {
  test::TempDir dir;
  write(
      dir / "credentials",
      "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n"
      "[dev]\naws_access_key_id = DEVKEY\naws_secret_access_key = DEVSECRET\naws_session_token = T\n");
  write(dir / "config",
        "[default]\nregion = eu-central-1\n[profile dev]\nregion = ap-south-1\n"
        "endpoint_url = http://127.0.0.1:9000/\n");
  const std::string creds = (dir / "credentials").string(), conf = (dir / "config").string();
  {
    Env env({{"AWS_SHARED_CREDENTIALS_FILE", creds.c_str()}, {"AWS_CONFIG_FILE", conf.c_str()}});
    const ObjectStoreConfig c = s3_config();
    ASSERT_TRUE(c.credentials);
    EXPECT_EQ(c.credentials->access_key, "FILEKEY");
    EXPECT_EQ(c.region, "eu-central-1");
    EXPECT_EQ(c.endpoint, "https://s3.eu-central-1.amazonaws.com");
    EXPECT_FALSE(c.path_style);  // AWS's own endpoint: virtual hosts
    EXPECT_EQ(c.credentials_from.find("FILESECRET"), std::string::npos);
  }
  {
    Env env({{"AWS_SHARED_CREDENTIALS_FILE", creds.c_str()},
             {"AWS_CONFIG_FILE", conf.c_str()},
             {"AWS_PROFILE", "dev"}});
    const ObjectStoreConfig c = s3_config();
    EXPECT_EQ(c.credentials->access_key, "DEVKEY");
    EXPECT_EQ(c.credentials->session_token, "T");
    EXPECT_EQ(c.region, "ap-south-1");
    EXPECT_EQ(c.endpoint, "http://127.0.0.1:9000");  // the profile's, without its '/'
    EXPECT_TRUE(c.path_style);                       // custom endpoints: path style
  }
  {  // The environment wins over the profile; AWS_REGION over AWS_DEFAULT_REGION.
    Env env({{"AWS_SHARED_CREDENTIALS_FILE", creds.c_str()},
             {"AWS_CONFIG_FILE", conf.c_str()},
             {"AWS_PROFILE", "dev"},
             {"AWS_ACCESS_KEY_ID", "ENVKEY"},
             {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"},
             {"AWS_REGION", "r1"},
             {"AWS_DEFAULT_REGION", "r2"},
             {"AWS_ENDPOINT_URL_S3", "http://s3only"},
             {"AWS_ENDPOINT_URL", "http://all"},
             {"TLIO_S3_ADDRESSING_STYLE", "virtual"}});
    const ObjectStoreConfig c = s3_config();
    EXPECT_EQ(c.credentials->access_key, "ENVKEY");
    EXPECT_EQ(c.credentials->session_token, "");
    EXPECT_EQ(c.region, "r1");
    EXPECT_EQ(c.endpoint, "http://s3only");
    EXPECT_FALSE(c.path_style);
  }
  {  // Anonymous when asked, and when nothing is found.
    Env env({{"AWS_ACCESS_KEY_ID", "K"},
             {"AWS_SECRET_ACCESS_KEY", "S"},
             {"AWS_NO_SIGN_REQUEST", "true"}});
    EXPECT_FALSE(s3_config().credentials);
  }
  {
    Env env({{"HOME", dir.path().c_str()}});
    EXPECT_FALSE(s3_config().credentials);
    EXPECT_EQ(s3_config().region, "us-east-1");
  }
  {  // Mistakes are named, never guessed around.
    Env env({{"AWS_SHARED_CREDENTIALS_FILE", creds.c_str()},
             {"AWS_CONFIG_FILE", conf.c_str()},
             {"AWS_PROFILE", "nope"}});
    EXPECT_THROW((void)s3_config(), Error);
  }
  {
    Env env({{"AWS_ACCESS_KEY_ID", "K"}});
    try {
      (void)s3_config();
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("AWS_SECRET_ACCESS_KEY is not"), std::string::npos)
          << e.what();
    }
  }
  {
    Env env({{"TLIO_S3_ADDRESSING_STYLE", "sideways"}, {"HOME", dir.path().c_str()}});
    EXPECT_THROW((void)s3_config(), Error);
  }
}

TEST(ObjectStoreConfig, GsFromTheEnvironmentOrABotoConfig) {
  test::TempDir dir;
  write(
      dir / "boto",
      "[Credentials]\ngs_access_key_id = GOOGKEY\ngs_secret_access_key = GOOGSECRET\ngs_host = gs.example\n");
  const std::string boto = (dir / "boto").string();
  {
    Env env({{"BOTO_CONFIG", boto.c_str()}});
    const ObjectStoreConfig c = gs_config();
    EXPECT_EQ(c.credentials->access_key, "GOOGKEY");
    EXPECT_EQ(c.endpoint, "https://gs.example");
    EXPECT_TRUE(c.path_style);
    EXPECT_EQ(c.region, "auto");
  }
  {
    Env env({{"BOTO_CONFIG", boto.c_str()},
             {"GOOGLE_ACCESS_KEY_ID", "E"},
             {"GOOGLE_SECRET_ACCESS_KEY", "F"},
             {"TLIO_GS_ENDPOINT_URL", "http://127.0.0.1:1/"}});
    const ObjectStoreConfig c = gs_config();
    EXPECT_EQ(c.credentials->access_key, "E");
    EXPECT_EQ(c.endpoint, "http://127.0.0.1:1");
  }
  {
    Env env({{"HOME", dir.path().c_str()}});
    EXPECT_FALSE(gs_config().credentials);
    EXPECT_EQ(gs_config().endpoint, "https://storage.googleapis.com");
  }
}

TEST(S3Client, AddressesObjectsPathStyleOrByVirtualHost) {
  ObjectStoreConfig c;
  c.endpoint = "http://127.0.0.1:9000";
  c.path_style = true;
  const S3Object o = parse_s3_url("s3://bucket/models/llama 3/model.safetensors");
  EXPECT_EQ(o.bucket, "bucket");
  EXPECT_EQ(o.key, "models/llama 3/model.safetensors");
  EXPECT_EQ(S3Client(c).url(o), "http://127.0.0.1:9000/bucket/models/llama%203/model.safetensors");
  EXPECT_EQ(S3Client(c).url(o, "uploads="),
            "http://127.0.0.1:9000/bucket/models/llama%203/model.safetensors?uploads=");
  c.endpoint = "https://s3.eu-west-1.amazonaws.com";
  c.path_style = false;
  EXPECT_EQ(S3Client(c).url(o),
            "https://bucket.s3.eu-west-1.amazonaws.com/models/llama%203/model.safetensors");
  // Names that cannot be a host under a TLS wildcard go path-style, as botocore sends them.
  EXPECT_EQ(S3Client(c).url(parse_s3_url("s3://my.models/k")),
            "https://s3.eu-west-1.amazonaws.com/my.models/k");
  EXPECT_EQ(S3Client(c).url(parse_s3_url("s3://Upper_Case/k")),
            "https://s3.eu-west-1.amazonaws.com/Upper_Case/k");
  EXPECT_EQ(parse_s3_url("s3://b").key, "");
  EXPECT_THROW((void)parse_s3_url("s3:///key"), Error);
  EXPECT_THROW((void)parse_s3_url("s3://bad bucket/key"), Error);
  EXPECT_EQ(s3_part_size(1), kS3PartSize);
  EXPECT_EQ(s3_part_size(kS3PartSize * kS3MaxParts), 2 * kS3PartSize);  // never over 10,000 parts
}

TEST(S3Client, ErrorsByKindNameTheBucketAndKey) {
  ObjectStoreConfig c;
  c.credentials_from = "the environment (AWS_ACCESS_KEY_ID)";
  const S3Object o{"b", "k.safetensors"};
  auto explain = [&](long status, std::string_view body) {
    return *explain_s3_error(status, body, o, c);
  };
  const auto missing = explain(
      404,
      "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>");
  EXPECT_EQ(missing.os_error, ENOENT);
  EXPECT_EQ(
      missing.message,
      "NoSuchKey: The specified key does not exist. (bucket 'b', key 'k.safetensors', HTTP 404)");
  const auto refused =
      explain(403, "<Error><Code>SignatureDoesNotMatch</Code><Message>x &amp; y</Message></Error>");
  EXPECT_EQ(refused.os_error, EACCES);
  EXPECT_FALSE(refused.retry);
  EXPECT_NE(refused.message.find("x & y"), std::string::npos);
  EXPECT_NE(refused.message.find("credentials from the environment"), std::string::npos);
  EXPECT_NE(explain(400, "<Error><Code>ExpiredToken</Code></Error>").message.find("expired"),
            std::string::npos);
  EXPECT_TRUE(explain(503, "<Error><Code>SlowDown</Code></Error>").retry);
  EXPECT_TRUE(explain(500, "").retry);
  EXPECT_EQ(explain(403, "").os_error, EACCES);  // a HEAD has no body
  EXPECT_EQ(explain(404, "").os_error, ENOENT);
  EXPECT_FALSE(explain_s3_error(400, "not xml", o, c));
}

TEST(HfStore, ReadsTheLocalCacheWithoutARequest) {
  test::TempDir dir;
  const std::filesystem::path repo = dir / "hub" / "models--org--name";
  const std::string commit(40, 'a');
  write(repo / "refs" / "main", commit + "\n");
  write(repo / "snapshots" / commit / "config.json", "{}");
  write(repo / "snapshots" / commit / "sub" / "x.bin", "12345");
  const std::string cache = (dir / "hub").string();
  // Requests would go to a port nothing listens on, and offline mode forbids them anyway.
  Env env({{"HF_HUB_CACHE", cache.c_str()},
           {"HF_HUB_OFFLINE", "1"},
           {"HF_ENDPOINT", "http://127.0.0.1:9"}});
  const Location folder = Location::parse("hf://org/name");
  const Store& hub = store_of(folder);
  EXPECT_EQ(hub.is_directory(folder), true);
  EXPECT_EQ(hub.read_small(folder.join("config.json"), {}), std::optional<std::string>("{}"));
  EXPECT_EQ(hub.read_small(Location::parse("hf://models/org/name@" + commit + "/config.json"), {}),
            std::optional<std::string>("{}"));
  EXPECT_EQ(open_source(Location::parse("hf://org/name/sub/x.bin"), {})->size(), 5u);
  EXPECT_EQ(hub.read_small(folder.join("missing.json"), {}), std::nullopt);
  EXPECT_FALSE(hub.exists(folder.join("missing.json"), {}));
  try {
    (void)open_source(Location::parse("hf://org/name@dev/config.json"), {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.os_error(), std::errc::no_such_file_or_directory);
    EXPECT_NE(std::string(e.what()).find("HF_HUB_OFFLINE"), std::string::npos) << e.what();
  }
  // A path may not climb out of the snapshot, nor be absolute.
  // A pull request's revision as HfFileSystem writes it: refs/refs/pr/1 in the cache.
  write(repo / "refs" / "refs" / "pr" / "1", commit);
  EXPECT_EQ(hub.read_small(Location::parse("hf://org/name@refs/pr/1/config.json"), {}),
            std::optional<std::string>("{}"));
  EXPECT_EQ(hub.read_small(Location::parse("hf://org/name@refs%2Fpr%2F1/config.json"), {}),
            std::optional<std::string>("{}"));
  for (const char* bad :
       {"hf://org/name/../../../x", "hf://org/name//etc/passwd", "hf://org/name/a/./b", "hf://org",
        "hf://org/na me/x", "hf://org/name@..%2F..%2Fx/config.json",
        "hf://org/name@%2Fetc%2Fx/config.json"})
    EXPECT_THROW((void)hub.read_small(Location::parse(bad), {}), Error) << bad;
  EXPECT_FALSE(curl_library_loaded());
}

}  // namespace
}  // namespace tlio::detail
