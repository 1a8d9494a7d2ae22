// cli/cmd_trust.cpp: `tlio hash`, `tlio verify` and `tlio sign` (tlio/trust.hpp).
#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/trust.hpp"

namespace tlio::cli {

namespace {

constexpr unsigned kMaxThreads = 1024;

bool is_local_directory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// A line `sha256sum -c` reads back: "HEX  NAME", or, for a name with a backslash or a line
// break, "\HEX  NAME" with those escaped (as sha256sum writes it).
std::string sha256sum_line(const std::string& hex, const std::string& name) {
  if (name.find_first_of("\\\n\r") == std::string::npos) return fmt::format("{}  {}", hex, name);
  std::string escaped;
  for (char c : name) {
    if (c == '\\')
      escaped += "\\\\";
    else if (c == '\n')
      escaped += "\\n";
    else if (c == '\r')
      escaped += "\\r";
    else
      escaped += c;
  }
  return fmt::format("\\{}  {}", hex, escaped);
}

std::string json_or_null(const std::string& s) { return s.empty() ? "null" : json_string(s); }

}  // namespace

void add_hash(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "hash", "SHA-256 of files, folders and URLs, printed as sha256sum prints them");
  cmd->footer(
      "Prints 'HEX  NAME' per file, so `sha256sum -c` checks the output. A folder is hashed\n"
      "whole, recursively (without its .git folder; links to files followed); files are hashed\n"
      "in parallel over the cores. A URL is hashed as it downloads (nothing is stored); when its\n"
      "server publishes a SHA-256 (the Hub's X-Linked-Etag), the bytes are checked against it.\n"
      "What cannot be hashed (a FIFO, a link to no file, a folder it cannot read) is named on\n"
      "stderr and the rest is hashed. Exit 0 when every file was hashed, 1 otherwise.\n\n"
      "Example: tlio hash model/ > model.sha256 && sha256sum -c model.sha256");
  struct Args {
    std::vector<std::string> paths;
    bool json = false;
    unsigned threads = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("PATH", a->paths, "Files, folders or URLs (http(s)://, s3://, gs://, hf://)")
      ->required();
  cmd->add_option("--threads", a->threads, "Files hashed at once (default: one per core)")
      ->check(count_check(kMaxThreads));
  add_remote_options(cmd);
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"ok\", \"files\": [{\"path\", \"size\", \"sha256\", "
      "\"checked_against\", \"error\"}]}");
  cmd->callback([a, &exit_code] {
    int rc = kExitOk;
    std::vector<std::string> locations, shown, items;
    for (const std::string& p : a->paths) {
      if (!is_local_directory(p)) {
        locations.push_back(p);
        shown.push_back(display_location(p));
        continue;
      }
      std::vector<std::string> files;
      std::vector<tlio::SkippedEntry> skipped;  // named, and the rest still hashed
      std::string error;
      const auto list = [&] {
        files = tlio::folder_files(p, true, skipped);
        return kExitOk;
      };
      const auto failed = [&](const std::string& path, const std::string& error_json) {
        if (a->json)
          items.push_back(fmt::format(
              "{{\"path\":{},\"size\":null,\"sha256\":null,\"checked_against\":null,\"error\":{}}}",
              json_string(path), error_json));
        rc = kExitFailure;
      };
      if (a->json ? guarded_json(list, error) != kExitOk : guarded(list) != kExitOk) {
        failed(p, error);
        continue;
      }
      for (const tlio::SkippedEntry& s : skipped) {
        const std::string path = join_path(p, s.path);
        const std::string message = fmt::format("{}: {}", display_name(path), s.reason);
        if (!a->json) print_error(message);
        failed(path, fmt::format("{{\"message\":{}}}", json_string(message)));
      }
      for (const std::string& f : files) {
        locations.push_back(join_path(p, f));
        shown.push_back(locations.back());
      }
    }
    tlio::HashOptions options;
    options.open = open_options();
    options.threads = a->threads;
    const int outer = guarded_output(a->json, [&] {
      tlio::hash_files(
          locations, options, [&](size_t i, const tlio::FileHash& h, const tlio::Error* e) {
            if (a->json) {
              std::string error = "null";
              if (e) guarded_json([&]() -> int { throw *e; }, error);
              items.push_back(fmt::format(
                  "{{\"path\":{},\"size\":{},\"sha256\":{},\"checked_against\":{},\"error\":{}}}",
                  json_string(shown[i]), e ? "null" : std::to_string(h.size),
                  json_or_null(h.sha256), json_or_null(h.checked_against), error));
            } else if (e) {
              guarded([&]() -> int { throw *e; });
            } else {
              fmt::print("{}\n", sha256sum_line(h.sha256, shown[i]));
              std::fflush(stdout);
            }
            if (e) rc = kExitFailure;
          });
      return kExitOk;
    });
    if (outer != kExitOk) {
      exit_code = outer;  // interrupted, or out of memory: the JSON error was the output
      return;
    }
    if (a->json) fmt::print("{{\"ok\":{},\"files\":[{}]}}\n", rc == kExitOk, fmt::join(items, ","));
    std::fflush(stdout);
    exit_code = rc;
  });
}

void add_sign(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sign", "Sign a model folder (OpenSSF model-signing v1.0, with an elliptic-curve key)");
  cmd->footer(
      "Writes a Sigstore bundle listing the SHA-256 of every file in FOLDER (recursively; the\n"
      "signature itself, .git* paths at the top and --ignore-paths left out), signed with\n"
      "ECDSA by the PEM private key (P-256, P-384 or P-521). `model_signing verify key` accepts\n"
      "it, and `tlio verify FOLDER --key PUBLIC.pem` checks it.\n\n"
      "Example: openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > key.pem\n"
      "         openssl ec -in key.pem -pubout > key.pub && tlio sign model/ --key key.pem");
  struct Args {
    std::string folder, key, signature;
    std::vector<std::string> ignore;
    unsigned threads = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FOLDER", a->folder, "The model folder")->required();
  cmd->add_option("--key", a->key, "The PEM private key (unencrypted)")
      ->required()
      ->type_name("PATH");
  cmd->add_option("--signature", a->signature,
                  "Where the signature goes (default: FOLDER/model.sig)")
      ->type_name("PATH");
  cmd->add_option("--ignore-paths", a->ignore, "Paths in FOLDER (files or folders) to leave out")
      ->type_name("PATH");
  cmd->add_option("--threads", a->threads, "Files hashed at once (default: one per core)")
      ->check(count_check(kMaxThreads));
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"ok\", \"signature\"} or {\"error\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      tlio::SignOptions o;
      o.signature = a->signature;
      o.ignore_paths = a->ignore;
      o.threads = a->threads;
      const std::string where = tlio::sign_folder(a->folder, a->key, o);
      if (a->json)
        fmt::print("{{\"ok\":true,\"signature\":{}}}\n", json_string(where));
      else
        fmt::print("{}: signed ({})\n", a->folder, where);
      return kExitOk;
    });
  });
}

void add_verify(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "verify", "Check files are the ones meant: validate plus SHA-256, or a model signature");
  cmd->footer(
      "A file or URL: every check of `tlio validate`, then a full read whose SHA-256 must equal\n"
      "--sha256 when given, and what the server publishes (the Hub's X-Linked-Etag) when it does.\n"
      "With --key: a folder's model signature (FOLDER/model.sig, or --signature; a one-file\n"
      "model with --signature): the bundle, the key hint, the signature, the statement's root\n"
      "digest and every file's SHA-256; files added or removed fail it.\n"
      "Exit 0 when all pass, 1 naming each failure otherwise.\n\n"
      "Example: tlio verify model.safetensors --sha256 9f86d0...\n"
      "         tlio verify model/ --key key.pub");
  struct Args {
    std::vector<std::string> paths;
    std::string sha256, key, signature;
    std::vector<std::string> ignore;
    unsigned threads = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("PATH", a->paths,
                  "Files or URLs, or signed folders (and one-file models) with --key")
      ->required();
  cmd->add_option("--sha256", a->sha256, "The SHA-256 the file must have (one PATH only)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v.size() == 64 &&
                v.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos)
              return {};
            return "a SHA-256 is 64 hexadecimal digits";
          },
          "HEX"));
  cmd->add_option("--key", a->key,
                  "The PEM public key a folder's signature is checked with (or its private key)")
      ->type_name("PATH");
  cmd->add_option("--signature", a->signature,
                  "The signature of a folder (default: FOLDER/model.sig)")
      ->type_name("PATH");
  cmd->add_option("--ignore-paths", a->ignore,
                  "Paths in the folder left out besides those the signature lists")
      ->type_name("PATH");
  cmd->add_option("--threads", a->threads, "Files hashed at once (default: one per core)")
      ->check(count_check(kMaxThreads));
  add_remote_options(cmd);
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"ok\", \"results\": [{\"path\", \"kind\", \"ok\", \"sha256\", "
      "\"checked_against\", \"problems\", \"error\"}]}");
  cmd->callback([a, &exit_code] {
    if (!a->sha256.empty() && a->paths.size() != 1)
      throw CLI::ValidationError("--sha256", "takes one PATH only");
    for (const std::string& p : a->paths)
      if (is_local_directory(p) && a->key.empty())
        throw CLI::ValidationError(
            "--key",
            fmt::format("{} is a folder, checked against its signature: give --key PUBLIC.pem", p));
    if (!a->key.empty() && !a->sha256.empty())
      throw CLI::ValidationError(
          "--sha256", "checks a file's digest; --key checks a signature: give one of them");
    if (!a->key.empty() && a->signature.empty())
      for (const std::string& p : a->paths)
        if (!is_local_directory(p))
          throw CLI::ValidationError(
              "--signature",
              fmt::format("{} is a file, signed as a one-file model: name its signature", p));
    int rc = kExitOk;
    std::vector<std::string> items;
    for (const std::string& p : a->paths) {
      std::string error = "null", sha256, checked;
      std::vector<std::string> problems;
      const bool folder = !a->key.empty();  // a signed folder, or a one-file model
      const std::string shown = display_location(p);
      const auto check = [&] {
        if (folder) {
          tlio::VerifyOptions o;
          o.signature = a->signature;
          o.ignore_paths = a->ignore;
          o.threads = a->threads;
          const tlio::SignatureCheck c = tlio::check_signature(p, a->key, o);
          problems = c.problems;
          if (!c.ok()) {
            if (!a->json)
              for (const std::string& problem : problems)
                print_error(fmt::format("{}: {}", shown, problem));
            return kExitFailure;
          }
          if (!a->json)
            fmt::print("{}: OK (signature: {} file{})\n", shown, c.files, c.files == 1 ? "" : "s");
          return kExitOk;
        }
        const tlio::File f = tlio::File::open(p, open_options());
        tlio::find_quantized_weights(f);  // validate's checks
        const tlio::FileHash h =
            a->sha256.empty() ? tlio::hash_file(f) : tlio::check_sha256(f, a->sha256);
        sha256 = h.sha256;
        checked = h.checked_against;
        if (!a->json)
          fmt::print("{}: OK (sha256 {}{}{})\n", f.name(), h.sha256,
                     checked.empty() ? "" : ", matches its ", checked);
        return kExitOk;
      };
      const int one = a->json ? guarded_json(check, error) : guarded(check);
      if (one != kExitOk) rc = kExitFailure;
      if (a->json) {
        std::vector<std::string> quoted;
        for (const std::string& problem : problems) quoted.push_back(json_string(problem));
        items.push_back(fmt::format(
            "{{\"path\":{},\"kind\":\"{}\",\"ok\":{},\"sha256\":{},\"checked_against\":{},\"problems\":[{}],\"error\":{}}}",
            json_string(shown), folder ? "signature" : "file", one == kExitOk, json_or_null(sha256),
            json_or_null(checked), fmt::join(quoted, ","), error));
      }
    }
    if (a->json)
      fmt::print("{{\"ok\":{},\"results\":[{}]}}\n", rc == kExitOk, fmt::join(items, ","));
    std::fflush(stdout);
    exit_code = rc;
  });
}

}  // namespace tlio::cli
