// trust/model_signing.cpp: model signatures in the OpenSSF model-signing v1.0 format, key-based
// (docs/security.md states it): a Sigstore bundle (v0.3) whose DSSE envelope carries an in-toto
// statement listing every file's SHA-256, signed with ECDSA over DSSE's pre-authentication
// encoding. Bundles of the model_signing tool verify here and this file's verify there.
#include "trust/model_signing.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "common/text.hpp"
#include "io/atomic_file.hpp"
#include "io/digest.hpp"
#include "io/ecdsa.hpp"
#include "io/interrupt.hpp"
#include "io/os_file.hpp"
#include "tlio/trust.hpp"
#include "trust/hash.hpp"

namespace tlio {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";
constexpr std::string_view kPayloadType = "application/vnd.in-toto+json";
constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
constexpr std::string_view kPredicateType = "https://model_signing/signature/v1.0";
// Left out of every signature and recorded as such, present or not (model_signing does the same).
constexpr std::string_view kGitPaths[] = {".git", ".gitattributes", ".github", ".gitignore"};

// DSSE's pre-authentication encoding: what the signature covers.
std::string pae(std::string_view payload) {
  return fmt::format("DSSEv1 {} {} {} ", kPayloadType.size(), kPayloadType, payload.size())
      .append(payload);
}

// A JSON string with everything past ASCII as \uXXXX escapes, as model_signing's protobuf JSON
// writes its statements (`s` is valid UTF-8: sign_folder checks the names).
std::string json_quoted(std::string_view s) {
  std::string quoted, out;
  detail::append_json_string(quoted, s);  // escapes quotes and controls, leaves UTF-8 as is
  for (size_t i = 0; i < quoted.size();) {
    const auto c = static_cast<unsigned char>(quoted[i]);
    if (c < 0x80) {
      out += quoted[i++];
      continue;
    }
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t cp = c & (0x7F >> n);
    for (size_t k = 1; k < n && i + k < quoted.size(); ++k)
      cp = cp << 6 | (static_cast<unsigned char>(quoted[i + k]) & 0x3F);
    i += n;
    if (cp >= 0x10000)  // a surrogate pair
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + ((cp - 0x10000) >> 10),
                         0xDC00 + ((cp - 0x10000) & 0x3FF));
    else
      out += fmt::format("\\u{:04x}", cp);
  }
  return out;
}

// The key's public half as PEM (64-character lines), the text model_signing hashes for the hint.
std::string key_hint(const detail::EcKey& key) {
  const std::string b64 = detail::base64_encode(key.public_key_der());
  std::string pem = "-----BEGIN PUBLIC KEY-----\n";
  for (size_t at = 0; at < b64.size(); at += 64) pem.append(b64, at, 64).push_back('\n');
  pem += "-----END PUBLIC KEY-----\n";
  return detail::to_hex(detail::sha256(pem));
}

// Verifying takes a private key too (its public half checks the signature): people keep one file.
detail::EcKey read_key(const std::string& path, bool is_private) {
  const std::string pem = detail::read_text_file(path);
  if (is_private || pem.find("PRIVATE KEY-----") != std::string::npos)
    return detail::EcKey::private_from_pem(pem, path);
  return detail::EcKey::public_from_pem(pem, path);
}

// `path` relative to the folder (POSIX, normalised), or nullopt when it lies outside it.
std::optional<std::string> inside(const fs::path& folder, const fs::path& path) {
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(folder, ec);
  if (ec) return std::nullopt;
  const fs::path full =
      fs::weakly_canonical(path.is_absolute() ? path : fs::current_path() / path, ec);
  if (ec) return std::nullopt;
  const fs::path rel = full.lexically_relative(base);
  const std::string text = rel.generic_string();
  if (text.empty() || text == "." || text == ".." || text.starts_with("../")) return std::nullopt;
  return text;
}

// An ignore path as a bundle lists it, relative to the folder; nullopt when it climbs out.
std::optional<std::string> relative_ignore(std::string_view text) {
  const fs::path p = fs::path(std::string(text)).lexically_normal();
  std::string s = p.generic_string();
  while (s.ends_with('/')) s.pop_back();
  if (s.empty() || s == "." || p.is_absolute() || s == ".." || s.starts_with("../"))
    return std::nullopt;
  return s;
}

bool ignored(const std::string& rel, const std::set<std::string>& paths) {
  for (const std::string& p : paths)
    if (rel == p || (rel.size() > p.size() && rel.starts_with(p) && rel[p.size()] == '/'))
      return true;
  return false;
}

bool is_one_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

std::string signature_path(const std::string& folder, const std::string& given) {
  if (!given.empty()) return given;
  if (is_one_file(folder))
    throw Error(
        ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
        "is a file, not a folder: name its signature file (a one-file model has no folder to hold it)",
        folder);
  return (fs::path(folder) / kDefaultSignatureName).string();
}

// The subject's name: the folder's own name, as model_signing takes it.
std::string model_name(const std::string& folder) {
  fs::path p = fs::path(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") {
    std::error_code ec;
    name = fs::weakly_canonical(fs::absolute(folder), ec).filename().string();
  }
  return name;
}

std::string join(const std::string& folder, const std::string& rel) {
  return folder.ends_with('/') ? folder + rel : folder + "/" + rel;
}

// The files of `folder` outside `ignore` (a model that is one file: the single resource ".").
// Links and special files are Error{unsupported}, or, with `refused` (verifying), problems, as
// are folders that cannot be read.
std::vector<std::string> model_files(const std::string& folder, const std::set<std::string>& ignore,
                                     std::vector<SkippedEntry>* refused) {
  if (is_one_file(folder)) return {"."};
  return detail::walk_folder(
      folder, false, [&](const std::string& rel) { return ignored(rel, ignore); }, refused);
}

// name -> hex SHA-256 of each of `names`. A file that cannot be read is Error (signing), or
// with `problems` (verifying) a problem, its name in `unreadable`.
std::map<std::string, std::string> digests(const std::string& folder,
                                           const std::vector<std::string>& names, unsigned threads,
                                           detail::Problems* problems = nullptr,
                                           std::set<std::string>* unreadable = nullptr) {
  std::vector<std::string> locations;
  locations.reserve(names.size());
  for (const std::string& n : names) locations.push_back(n == "." ? folder : join(folder, n));
  std::map<std::string, std::string> out;
  HashOptions options;
  options.threads = threads;
  detail::hash_many(locations, options, false, [&](size_t i, const FileHash& h, const Error* e) {
    if (!e) {
      out.emplace(names[i], h.sha256);
    } else if (problems) {
      problems->add(
          fmt::format("{}: cannot be hashed: {}", detail::shown_name(names[i]), e->what()));
      unreadable->insert(names[i]);
    } else {
      throw *e;
    }
  });
  return out;
}

// Text a statement lists must be UTF-8 (it is JSON): Error{unsupported} naming `where`.
void check_text(std::string_view text, const std::string& where, const char* what) {
  if (!simdjson::validate_utf8(text.data(), text.size()))
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        fmt::format(
            "{} is not UTF-8, which a signature (JSON) cannot list: rename it or leave it out",
            what),
        where);
}

// The in-toto statement, laid out as model_signing writes it (two-space indents).
std::string statement_text(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& files,
                           const std::set<std::string>& ignore) {
  detail::Sha256 root;  // over the raw digests in the listed order
  std::string resources;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::vector<unsigned char> raw = detail::from_hex(files[i].second);
    root.update(std::as_bytes(std::span(raw)));
    resources += fmt::format(
        "{}\n      {{\n        \"algorithm\": \"sha256\",\n        \"digest\": \"{}\",\n"
        "        \"name\": {}\n      }}",
        i ? "," : "", files[i].second, json_quoted(files[i].first));
  }
  const detail::Sha256Digest digest = root.finish();
  std::vector<std::string> ignore_list;
  for (const std::string& p : ignore) ignore_list.push_back("        " + json_quoted(p));
  return fmt::format(
      "{{\n  \"_type\": \"{}\",\n  \"subject\": [\n    {{\n      \"name\": {},\n      \"digest\": {{\n"
      "        \"sha256\": \"{}\"\n      }}\n    }}\n  ],\n  \"predicateType\": \"{}\",\n  \"predicate\": {{\n"
      "    \"serialization\": {{\n      \"method\": \"files\",\n      \"hash_type\": \"sha256\",\n"
      "      \"allow_symlinks\": false,\n      \"ignore_paths\": [\n{}\n      ]\n    }},\n"
      "    \"resources\": [{}\n    ]\n  }}\n}}",
      kStatementType, json_quoted(name), detail::to_hex(digest), kPredicateType,
      fmt::join(ignore_list, ",\n"), resources);
}

// What every signature leaves out: the .git paths, the signature itself, the caller's.
std::set<std::string> base_ignores(const std::string& folder, const std::string& signature,
                                   const std::vector<std::string>& extra) {
  std::set<std::string> out(std::begin(kGitPaths), std::end(kGitPaths));
  if (const auto rel = inside(folder, signature)) out.insert(*rel);
  for (const std::string& p : extra) {
    // Relative paths are the folder's; an absolute one counts when it lies inside it.
    const auto rel = fs::path(p).is_absolute() ? inside(folder, p) : relative_ignore(p);
    if (!rel)
      throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                  fmt::format("the ignore path {} is not inside the folder", detail::shown_name(p)),
                  folder);
    out.insert(*rel);
  }
  return out;
}

// A signature may replace an older signature, never another file (`--signature key.pem`).
void refuse_to_replace(const std::string& signature) {
  std::error_code ec;
  if (!fs::exists(signature, ec) || fs::is_empty(signature, ec)) return;
  std::string text;
  try {
    text = detail::read_text_file(signature);
    const detail::JsonDoc doc(text, signature, Rule::none);
    if (doc.optional_string("mediaType") == std::string(kBundleMediaType)) return;
  } catch (const Error&) {
  }
  throw Error(
      ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
      "exists and is not a model signature: it is not replaced (name another --signature, or remove it)",
      signature);
}

using Element = simdjson::dom::element;

template <class JsonValue>  // an element, or simdjson's result of a lookup
std::optional<std::string_view> string_at(const JsonValue& e, const char* key) {
  std::string_view s;
  if (e[key].get(s) != simdjson::SUCCESS) return std::nullopt;
  return s;
}

}  // namespace

std::string sign_folder(const std::string& folder, const std::string& private_key,
                        const SignOptions& options) {
  const detail::EcKey key = read_key(private_key, true);
  const std::string signature = signature_path(folder, options.signature);
  refuse_to_replace(signature);
  std::set<std::string> ignore = base_ignores(folder, signature, options.ignore_paths);
  {  // any other .git* entry at the top is left out too (and recorded, so verifiers agree)
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec))
      if (const std::string n = e.path().filename().string(); n.starts_with(".git"))
        ignore.insert(n);
  }
  const std::string name = model_name(folder);
  check_text(name, folder, "the folder's name");
  for (const std::string& p : ignore) check_text(p, folder, "an ignore path");
  const std::vector<std::string> names = model_files(folder, ignore, nullptr);
  for (const std::string& n : names) check_text(n, join(folder, n), "its name");
  const std::map<std::string, std::string> files = digests(folder, names, options.threads);
  std::vector<std::pair<std::string, std::string>> ordered(files.begin(), files.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return detail::path_order(a.first, b.first); });
  const std::string payload = statement_text(name, ordered, ignore);
  const std::vector<unsigned char> sig = key.sign(pae(payload));
  const std::string bundle = fmt::format(
      "{{\"mediaType\":\"{}\",\"verificationMaterial\":{{\"publicKey\":{{\"hint\":\"{}\"}},\"tlogEntries\":[]}},"
      "\"dsseEnvelope\":{{\"payload\":\"{}\",\"payloadType\":\"{}\",\"signatures\":[{{\"sig\":\"{}\",\"keyid\":\"\"}}]}}}}",
      kBundleMediaType, key_hint(key),
      detail::base64_encode(
          {reinterpret_cast<const unsigned char*>(payload.data()), payload.size()}),
      kPayloadType, detail::base64_encode(sig));
  detail::poll_interrupt();
  detail::AtomicFile out(signature);
  detail::pwrite_all(out.fd(), 0, std::as_bytes(std::span(bundle)), signature);
  out.commit();
  return signature;
}

namespace detail {

SignedStatement read_signature(std::string_view bundle_text, const std::string& source,
                               const EcKey& key) {
  SignedStatement out;
  Problems problems(out.problems);

  // The bundle: its media type, key hint and envelope.
  std::optional<JsonDoc> bundle;
  try {
    bundle.emplace(bundle_text, source, Rule::none);
  } catch (const Error& e) {
    problems.add(fmt::format("{} is not a Sigstore bundle: {}", source, e.what()));
    return out;
  }
  const Element root = bundle->root();
  if (string_at(root, "mediaType") != kBundleMediaType)
    problems.add(fmt::format("the bundle's mediaType is not {}", kBundleMediaType));
  const std::string hint = key_hint(key);
  if (const auto given = string_at(root["verificationMaterial"]["publicKey"], "hint");
      given && !given->empty()) {
    out.key_hint = std::string(*given);
    if (*given != hint)
      problems.add(
          fmt::format("the signature's key hint {} is not the public key given (its hint is {})",
                      shown_name(*given), hint));
  }  // (bundles of model_signing 1.0 carry the key's bytes instead: the signature check decides)
  Element envelope, first;
  std::vector<unsigned char> payload_bytes, sig;
  std::optional<std::string_view> payload_b64;
  if (root["dsseEnvelope"].get(envelope) != simdjson::SUCCESS) {
    problems.add("the bundle has no dsseEnvelope");
    return out;
  }
  if (!(payload_b64 = string_at(envelope, "payload")) ||
      !base64_decode(*payload_b64, payload_bytes)) {
    problems.add("the bundle has no dsseEnvelope.payload in base64");
    return out;
  }
  if (envelope["signatures"].at(0).get(first) != simdjson::SUCCESS ||
      !base64_decode(string_at(first, "sig").value_or(""), sig) || sig.empty()) {
    problems.add("the bundle has no dsseEnvelope.signatures[0].sig in base64");
    return out;
  }
  const std::string payload(payload_bytes.begin(), payload_bytes.end());
  if (string_at(envelope, "payloadType") != kPayloadType)
    problems.add(fmt::format("the envelope's payloadType is not {}", kPayloadType));
  if (!key.verify(pae(payload), sig)) {
    problems.add(
        "the signature does not verify with the public key given: the statement was changed, or signed "
        "by another key");
    return out;  // what an unsigned statement lists is not worth reading
  }
  out.trusted = true;

  // The statement: one subject whose digest covers the resources, which list every file.
  std::optional<JsonDoc> statement;
  try {
    statement.emplace(payload, source + " (its statement)", Rule::none);
  } catch (const Error& e) {
    problems.add(fmt::format("the statement is not JSON: {}", e.what()));
    return out;
  }
  const Element st = statement->root();
  if (string_at(st, "_type") != kStatementType)
    problems.add(fmt::format("the statement's _type is not {}", kStatementType));
  if (string_at(st, "predicateType") != kPredicateType)
    problems.add(fmt::format("the statement's predicateType is not {}", kPredicateType));
  simdjson::dom::array subjects;
  std::optional<std::string_view> subject_digest;
  if (st["subject"].get(subjects) == simdjson::SUCCESS && subjects.size() == 1) {
    if (!(subject_digest = string_at(subjects.at(0)["digest"], "sha256")))
      problems.add("the statement's subject has no sha256 digest");
  } else {
    problems.add("the statement does not have exactly one subject");
  }
  const auto serialization = st["predicate"]["serialization"];
  if (string_at(serialization, "method") != "files" ||
      string_at(serialization, "hash_type") != "sha256")
    problems.add("the statement's serialization is not the \"files\" method over sha256");
  if (simdjson::dom::array listed; serialization["ignore_paths"].get(listed) == simdjson::SUCCESS)
    for (Element p : listed)
      if (std::string_view text; p.get(text) == simdjson::SUCCESS)
        out.ignore_paths.emplace_back(text);

  Sha256 root_digest;  // over the raw digests, in the order listed
  simdjson::dom::array resources;
  if (st["predicate"]["resources"].get(resources) != simdjson::SUCCESS) {
    problems.add("the statement lists no resources");
    return out;
  }
  for (Element r : resources) {
    const auto name = string_at(r, "name"), algorithm = string_at(r, "algorithm"),
               digest = string_at(r, "digest");
    const std::vector<unsigned char> raw =
        digest && is_sha256_hex(*digest) ? from_hex(*digest) : std::vector<unsigned char>{};
    if (!name || algorithm != "sha256" || raw.empty()) {
      problems.add(fmt::format(
          "the statement has a resource that is not {{name, algorithm sha256, digest}}: {}",
          shown_name(simdjson::to_string(r).substr(0, 200))));
      continue;
    }
    root_digest.update(std::as_bytes(std::span(raw)));
    if (!out.files.emplace(std::string(*name), ascii_lower(*digest)).second)
      problems.add(fmt::format("the statement lists {} twice", quote_name(*name)));
  }
  const std::string recomputed = to_hex(root_digest.finish());
  if (subject_digest && ascii_lower(*subject_digest) != recomputed)
    problems.add(fmt::format(
        "the subject's digest {} is not the SHA-256 of the resources' digests ({}): the "
        "statement is inconsistent",
        shown_name(*subject_digest), recomputed));
  return out;
}

}  // namespace detail

SignatureCheck check_signature(const std::string& folder, const std::string& public_key,
                               const VerifyOptions& options) {
  const detail::EcKey key = read_key(public_key, false);
  const std::string signature = signature_path(folder, options.signature);
  detail::SignedStatement statement =
      detail::read_signature(detail::read_text_file(signature), signature, key);
  SignatureCheck check;
  check.problems = std::move(statement.problems);
  check.key_hint = std::move(statement.key_hint);
  check.files = statement.files.size();
  if (!statement.trusted) return check;  // an unsigned list of files is no reason to read them
  std::set<std::string> ignore = base_ignores(folder, signature, options.ignore_paths);
  for (const std::string& p : statement.ignore_paths)
    if (const auto rel = relative_ignore(p)) ignore.insert(*rel);

  // The files as they are now.
  detail::Problems problems(check.problems);
  std::vector<SkippedEntry> refused;  // links, special files, unreadable folders: problems
  const std::vector<std::string> names = model_files(folder, ignore, &refused);
  for (const SkippedEntry& r : refused)
    problems.add(fmt::format("{}: {}", detail::shown_name(r.path), r.reason));
  std::set<std::string> unreadable;  // reported by digests() already
  const std::map<std::string, std::string> now =
      digests(folder, names, options.threads, &problems, &unreadable);
  for (const auto& [name, digest] : statement.files) {
    const auto it = now.find(name);
    if (it == now.end()) {
      if (!unreadable.count(name))
        problems.add(fmt::format("{}: missing (the signature lists it)", detail::shown_name(name)));
    } else if (it->second != digest) {
      problems.add(fmt::format("{}: its SHA-256 is {}, the signature says {}",
                               detail::shown_name(name), it->second, digest));
    }
  }
  for (const auto& [name, digest] : now)
    if (!statement.files.count(name))
      problems.add(
          fmt::format("{}: not in the signature (a file added)", detail::shown_name(name)));
  return check;
}

SignatureCheck verify_signature(const std::string& folder, const std::string& public_key,
                                const VerifyOptions& options) {
  SignatureCheck check = check_signature(folder, public_key, options);
  if (!check.ok())
    throw Error(ErrorCode::verification, Rule::none, {}, std::nullopt,
                fmt::format("the signature does not match: {}", fmt::join(check.problems, "; ")),
                signature_path(folder, options.signature));
  return check;
}

}  // namespace tlio
