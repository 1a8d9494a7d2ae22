#include "io/object_store_config.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <system_error>

#include "common/text.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

bool env_true(const char* name) {
  const auto v = env_value(name);
  return v && (*v == "1" || ascii_lower(*v) == "true" || ascii_lower(*v) == "yes");
}

std::filesystem::path home() {
  const auto h = env_value("HOME");
  return h ? std::filesystem::path(*h) : std::filesystem::path();
}

// The file, parsed; an empty one when it does not exist.
IniFile read_ini(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return {};
  return parse_ini(read_text_file(path));
}

const std::string* lookup(const IniFile& ini, std::string_view section, std::string_view key) {
  const auto s = ini.find(section);
  if (s == ini.end()) return nullptr;
  const auto k = s->second.find(std::string(key));
  return k == s->second.end() || k->second.empty() ? nullptr : &k->second;
}

}  // namespace

IniFile parse_ini(std::string_view text) {
  IniFile out;
  std::string section, nested;
  bool in_section = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view raw = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    const std::string_view line = trim_blanks(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.find(']') != std::string_view::npos) {  // "[prod]  # note" too
      section = std::string(trim_blanks(line.substr(1, line.find(']') - 1)));
      nested.clear();
      in_section = true;
      out[section];
      continue;
    }
    const size_t eq = line.find_first_of("=:");  // "key = value" or "key: value", as botocore
    if (!in_section || eq == std::string_view::npos) continue;  // as botocore: ignored
    const std::string key = ascii_lower(trim_blanks(line.substr(0, eq)));
    const std::string value(trim_blanks(line.substr(eq + 1)));
    if (indented && !nested.empty()) {
      out[section][nested + "." + key] = value;
      continue;
    }
    nested = value.empty() ? key : std::string();  // "s3 =" opens a nested block
    out[section][key] = value;
  }
  return out;
}

ObjectStoreConfig s3_config() {
  ObjectStoreConfig c;
  c.scheme = "s3";
  const auto config_path =
      env_value("AWS_CONFIG_FILE").value_or((home() / ".aws" / "config").string());
  const auto credentials_path =
      env_value("AWS_SHARED_CREDENTIALS_FILE").value_or((home() / ".aws" / "credentials").string());
  const auto named =
      env_value("AWS_PROFILE") ? env_value("AWS_PROFILE") : env_value("AWS_DEFAULT_PROFILE");
  const std::string profile = named.value_or("default");
  const IniFile config = read_ini(config_path), credentials = read_ini(credentials_path);
  // ~/.aws/config names profiles "[profile NAME]" (the default one "[default]" too);
  // ~/.aws/credentials names them "[NAME]".
  const std::string config_section =
      profile == "default" && config.count("default") ? "default" : "profile " + profile;
  const bool in_config = config.count(config_section) > 0,
             in_credentials = credentials.count(profile) > 0;
  if (named && !in_config && !in_credentials)
    throw_invalid(fmt::format("the AWS profile '{}' (AWS_PROFILE) is in neither {} nor {}", profile,
                              config_path, credentials_path));
  auto setting = [&](std::string_view key) -> const std::string* {
    return lookup(config, config_section, key);
  };

  // Credentials: the environment, then the credentials file, then the config file.
  const auto id = env_value("AWS_ACCESS_KEY_ID"), secret = env_value("AWS_SECRET_ACCESS_KEY");
  if (id.has_value() != secret.has_value())
    throw_invalid(fmt::format("{} is set but {} is not",
                              id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                              id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID"));
  if (env_true("AWS_NO_SIGN_REQUEST")) {
    c.credentials_from = "none (AWS_NO_SIGN_REQUEST)";
  } else if (id) {
    c.credentials = AwsCredentials{*id, *secret, env_value("AWS_SESSION_TOKEN").value_or("")};
    c.credentials_from = "the environment (AWS_ACCESS_KEY_ID)";
  } else {
    for (const auto& [ini, section, path] : {std::tuple{&credentials, profile, credentials_path},
                                             std::tuple{&config, config_section, config_path}}) {
      const std::string* key = lookup(*ini, section, "aws_access_key_id");
      const std::string* sec = lookup(*ini, section, "aws_secret_access_key");
      if (!key && !sec) continue;
      if (!key || !sec)
        throw_invalid(fmt::format("the AWS profile '{}' in {} has {} but not {}", profile, path,
                                  key ? "aws_access_key_id" : "aws_secret_access_key",
                                  key ? "aws_secret_access_key" : "aws_access_key_id"));
      const std::string* token = lookup(*ini, section, "aws_session_token");
      c.credentials = AwsCredentials{*key, *sec, token ? *token : std::string()};
      c.credentials_from = fmt::format("profile '{}' in {}", profile, path);
      break;
    }
    if (!c.credentials) c.credentials_from = "none found (requests are sent unsigned)";
  }

  if (const auto r = env_value("AWS_REGION"))
    c.region = *r;
  else if (const auto d = env_value("AWS_DEFAULT_REGION"))
    c.region = *d;
  else if (const std::string* p = setting("region"))
    c.region = *p;
  else
    c.region = "us-east-1";

  std::optional<std::string> endpoint;
  if (!env_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") &&
      !(setting("ignore_configured_endpoint_urls") &&
        ascii_lower(*setting("ignore_configured_endpoint_urls")) == "true")) {
    if ((endpoint = env_value("AWS_ENDPOINT_URL_S3"))) {
    } else if ((endpoint = env_value("AWS_ENDPOINT_URL"))) {
    } else if (const std::string* p = setting("s3.endpoint_url")) {
      endpoint = *p;
    } else if (const std::string* q = setting("endpoint_url")) {
      endpoint = *q;
    }
  }
  c.custom_endpoint = endpoint.has_value();
  c.endpoint = endpoint.value_or(fmt::format("https://s3.{}.amazonaws.com", c.region));
  while (c.endpoint.ends_with('/')) c.endpoint.pop_back();

  std::string style = "auto";
  if (const auto s = env_value("TLIO_S3_ADDRESSING_STYLE"))
    style = ascii_lower(*s);
  else if (const std::string* p = setting("s3.addressing_style"))
    style = ascii_lower(*p);
  if (style != "auto" && style != "path" && style != "virtual")
    throw_invalid(fmt::format("S3 addressing style '{}' is none of auto, path and virtual", style));
  // As the SDKs do: path style for custom endpoints (MinIO, Ceph, an IP address), virtual hosts
  // for AWS's own.
  c.path_style = style == "path" || (style == "auto" && c.custom_endpoint);
  return c;
}

ObjectStoreConfig gs_config() {
  ObjectStoreConfig c;
  c.scheme = "gs";
  c.region = "auto";
  const auto boto_path = env_value("BOTO_CONFIG").value_or((home() / ".boto").string());
  const IniFile boto = read_ini(boto_path);
  const auto id = env_value("GOOGLE_ACCESS_KEY_ID"), secret = env_value("GOOGLE_SECRET_ACCESS_KEY");
  if (id.has_value() != secret.has_value())
    throw_invalid(fmt::format("{} is set but {} is not",
                              id ? "GOOGLE_ACCESS_KEY_ID" : "GOOGLE_SECRET_ACCESS_KEY",
                              id ? "GOOGLE_SECRET_ACCESS_KEY" : "GOOGLE_ACCESS_KEY_ID"));
  if (id) {
    c.credentials = AwsCredentials{*id, *secret};
    c.credentials_from = "the environment (GOOGLE_ACCESS_KEY_ID)";
  } else {
    // boto keeps them in [Credentials]; a [gs] section is read too.
    for (const char* section : {"Credentials", "gs"}) {
      const std::string* key = lookup(boto, section, "gs_access_key_id");
      const std::string* sec = lookup(boto, section, "gs_secret_access_key");
      if (!key && !sec) continue;
      if (!key || !sec)
        throw_invalid(fmt::format("[{}] of {} has {} but not {}", section, boto_path,
                                  key ? "gs_access_key_id" : "gs_secret_access_key",
                                  key ? "gs_secret_access_key" : "gs_access_key_id"));
      c.credentials = AwsCredentials{*key, *sec};
      c.credentials_from = fmt::format("[{}] of {}", section, boto_path);
      break;
    }
    if (!c.credentials) c.credentials_from = "none found (requests are sent unsigned)";
  }
  std::optional<std::string> endpoint = env_value("TLIO_GS_ENDPOINT_URL");
  if (!endpoint)
    if (const std::string* host = lookup(boto, "Credentials", "gs_host")) {
      const std::string* port = lookup(boto, "Credentials", "gs_port");
      endpoint = "https://" + *host + (port ? ":" + *port : std::string());
    }
  c.custom_endpoint = endpoint.has_value();
  c.endpoint = endpoint.value_or("https://storage.googleapis.com");
  while (c.endpoint.ends_with('/')) c.endpoint.pop_back();
  c.path_style = true;  // storage.googleapis.com/BUCKET/KEY serves every bucket name
  return c;
}

}  // namespace tlio::detail
