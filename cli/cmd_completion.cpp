// cli/cmd_completion.cpp: `tlio completion bash|zsh|fish` and `tlio help --man`, both generated
// from the CLI's own definitions (commands, options, their help), so they never fall behind it.
#include <fmt/core.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cli_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/dtype.hpp"
#include "tlio/quant.hpp"
#include "tlio/version.hpp"

namespace tlio::cli {

namespace {

struct OptionSpec {
  std::vector<std::string> names;  // "--dtype", "-o"
  std::string value;               // "TEXT", "" for a flag
  std::string help;
  std::vector<std::string> words;  // the values it takes, when there are few (dtypes, schemes)
};

struct PositionalSpec {
  std::string name, help;
  bool required = false, many = false;
};

struct CommandSpec {
  std::string path;  // "convert", "bigram generate"
  std::string description, footer;
  std::vector<OptionSpec> options;
  std::vector<PositionalSpec> positionals;
};

// The dtype names an option takes: every one (--storage), or those F32 converts to (--dtype).
std::vector<std::string> dtype_words(bool floating) {
  std::vector<std::string> out;
  for (tlio::Dtype d : tlio::all_dtypes())
    if (!floating || (tlio::is_floating(d) && tlio::can_convert(tlio::Dtype::F32, d)))
      out.emplace_back(tlio::dtype_name(d));
  return out;
}

std::vector<std::string> scheme_words() {
  std::vector<std::string> out;
  for (const tlio::SchemeInfo& s : tlio::quant_schemes()) {
    const std::string syntax(s.syntax);
    if (syntax.find('<') != std::string::npos) {  // a pattern: its example stands for it
      out.emplace_back(s.example);
      continue;
    }
    for (size_t start = 0; start <= syntax.size();) {
      const size_t comma = syntax.find(", ", start);
      out.push_back(syntax.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
  }
  return out;
}

void collect(CLI::App& app, const std::string& prefix, std::vector<CommandSpec>& out) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    CommandSpec c;
    c.path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    c.description = sub->get_description();
    c.footer = sub->get_footer();
    for (const CLI::Option* o : sub->get_options()) {
      if (o->get_positional()) {
        c.positionals.push_back({o->get_name(), o->get_description(), o->get_required(),
                                 o->get_expected_max() > 1});
        continue;
      }
      OptionSpec s;
      for (const std::string& n : o->get_lnames()) s.names.push_back("--" + n);
      for (const std::string& n : o->get_snames()) s.names.push_back("-" + n);
      s.value = o->get_type_size() == 0 ? "" : o->get_type_name();
      s.help = o->get_description();
      const std::string name = o->get_lnames().empty() ? "" : o->get_lnames()[0];
      if (name == "dtype" || name == "storage") s.words = dtype_words(name == "dtype");
      if (name == "scheme") s.words = scheme_words();
      c.options.push_back(std::move(s));
    }
    const size_t before = out.size();
    out.push_back(std::move(c));
    collect(*sub, out[before].path, out);
  }
}

// The help word for the top level ("help") and "completion"'s own argument.
const std::vector<std::string> kShells = {"bash", "zsh", "fish"};

std::vector<std::string> top_words(const std::vector<CommandSpec>& commands) {
  std::vector<std::string> words;
  for (const CommandSpec& c : commands)
    if (c.path.find(' ') == std::string::npos) words.push_back(c.path);
  words.emplace_back("help");
  return words;
}

std::string option_words(const CommandSpec& c) {
  std::vector<std::string> words;
  for (const OptionSpec& o : c.options) words.insert(words.end(), o.names.begin(), o.names.end());
  return fmt::format("{}", fmt::join(words, " "));
}

// Every option name that takes a value (the word after it is that value, not a command), each
// once, in the order the commands define them.
std::vector<std::string> valued_options(const std::vector<CommandSpec>& commands) {
  std::vector<std::string> valued;
  for (const CommandSpec& c : commands)
    for (const OptionSpec& o : c.options)
      if (!o.value.empty())
        for (const std::string& n : o.names)
          if (std::find(valued.begin(), valued.end(), n) == valued.end()) valued.push_back(n);
  return valued;
}

// The commands that have subcommands ("bigram"), each once.
std::vector<std::string> parent_commands(const std::vector<CommandSpec>& commands) {
  std::vector<std::string> parents;
  for (const CommandSpec& c : commands)
    if (const size_t sp = c.path.find(' '); sp != std::string::npos &&
        std::find(parents.begin(), parents.end(), c.path.substr(0, sp)) == parents.end())
      parents.push_back(c.path.substr(0, sp));
  return parents;
}

// `c`'s subcommands: (name, description).
std::vector<std::pair<std::string, std::string>> subcommands_of(const CommandSpec& c,
                                                                const std::vector<CommandSpec>& commands) {
  std::vector<std::pair<std::string, std::string>> subs;
  for (const CommandSpec& d : commands)
    if (d.path.rfind(c.path + " ", 0) == 0) subs.emplace_back(d.path.substr(c.path.size() + 1), d.description);
  return subs;
}

// bash: the command is the first word that is not an option (and, for a command with
// subcommands, the next one too); an option's value is completed from its words, else files.
std::string bash_script(const std::vector<CommandSpec>& commands) {
  std::string s = fmt::format(
      "# bash completion for tlio {} (generated by `tlio completion bash`)\n"
      "_tlio() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
      "  local cmd=\"\" i w\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${{COMP_WORDS[i]}}\"\n"
      "    case \"$w\" in -*) continue ;; esac\n"
      "    case \"${{COMP_WORDS[i-1]}}\" in\n",
      tlio::version());
  s += fmt::format("      {}) continue ;;\n", fmt::join(valued_options(commands), "|"));
  s += "    esac\n";
  const std::vector<std::string> parents = parent_commands(commands);
  s += "    if [[ -z $cmd ]]; then cmd=\"$w\"\n";
  if (!parents.empty())
    s += fmt::format("    elif [[ $cmd == @({}) ]]; then cmd=\"$cmd $w\"; break\n", fmt::join(parents, "|"));
  s += "    else break; fi\n  done\n";
  s += "  case \"$cmd:$prev\" in\n";
  for (const CommandSpec& c : commands)
    for (const OptionSpec& o : c.options)
      if (!o.words.empty())
        for (const std::string& n : o.names)
          s += fmt::format("    \"{}:{}\") COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n",
                           c.path, n, fmt::join(o.words, " "));
  s += fmt::format("    \"completion:\"*) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return ;;\n",
                   fmt::join(kShells, " "));
  s += "  esac\n";
  s += fmt::format("  if [[ -z $cmd ]]; then COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return; fi\n",
                   fmt::join(top_words(commands), " "));
  s += "  if [[ $cmd == help ]]; then\n";
  s += fmt::format("    COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return\n  fi\n",
                   fmt::join(top_words(commands), " "));
  s += "  local opts=\"\" subs=\"\"\n  case \"$cmd\" in\n";
  for (const CommandSpec& c : commands) {
    std::vector<std::string> subs;
    for (const auto& sub : subcommands_of(c, commands)) subs.push_back(sub.first);
    s += fmt::format("    \"{}\") opts=\"{}\"; subs=\"{}\" ;;\n", c.path, option_words(c),
                     fmt::join(subs, " "));
  }
  s += "  esac\n";
  s += "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\")); return; fi\n";
  s += "  if [[ -n $subs ]]; then COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\")); return; fi\n";
  // One name per line: names with spaces or glob characters stay whole.
  s += "  mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n}\n";
  s += "complete -o filenames -o bashdefault -F _tlio tlio\n";
  return s;
}

// zsh: the same decisions with zsh's arrays, descriptions shown beside commands and options.
std::string zsh_quote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string zsh_described(const std::vector<std::pair<std::string, std::string>>& items) {
  std::vector<std::string> quoted;
  for (const auto& [word, help] : items) {
    std::string escaped;
    for (char ch : word) escaped += ch == ':' ? std::string("\\:") : std::string(1, ch);
    quoted.push_back(zsh_quote(escaped + ":" + help.substr(0, help.find('\n'))));
  }
  return fmt::format("{}", fmt::join(quoted, " "));
}

std::string zsh_script(const std::vector<CommandSpec>& commands) {
  std::string s = fmt::format("#compdef tlio\n# zsh completion for tlio {} (generated by `tlio completion zsh`)\n"
                              "_tlio() {{\n  local cmd=\"\" i w prev=\"${{words[CURRENT-1]}}\"\n"
                              "  for ((i = 2; i < CURRENT; i++)); do\n    w=\"${{words[i]}}\"\n"
                              "    [[ $w == -* ]] && continue\n    case \"${{words[i-1]}}\" in\n",
                              tlio::version());
  const std::vector<std::string> parents = parent_commands(commands);
  s += fmt::format("      ({}) continue ;;\n    esac\n", fmt::join(valued_options(commands), "|"));
  s += "    if [[ -z $cmd ]]; then cmd=\"$w\"\n";
  if (!parents.empty())
    s += fmt::format("    elif [[ $cmd == ({}) ]]; then cmd=\"$cmd $w\"; break\n", fmt::join(parents, "|"));
  s += "    else break; fi\n  done\n  local -a items\n  case \"$cmd:$prev\" in\n";
  for (const CommandSpec& c : commands)
    for (const OptionSpec& o : c.options)
      if (!o.words.empty())
        for (const std::string& n : o.names)
          s += fmt::format("    \"{}:{}\") compadd -- {}; return ;;\n", c.path, n, fmt::join(o.words, " "));
  s += fmt::format("    \"completion:\"*) compadd -- {}; return ;;\n  esac\n", fmt::join(kShells, " "));
  std::vector<std::pair<std::string, std::string>> top;
  for (const CommandSpec& c : commands)
    if (c.path.find(' ') == std::string::npos) top.emplace_back(c.path, c.description);
  top.emplace_back("help", "List the commands, or show a command's options");
  s += fmt::format("  if [[ -z $cmd || $cmd == help ]]; then\n    items=({})\n"
                   "    _describe command items; return\n  fi\n", zsh_described(top));
  s += "  case \"$cmd\" in\n";
  for (const CommandSpec& c : commands) {
    std::vector<std::pair<std::string, std::string>> opts;
    for (const OptionSpec& o : c.options)
      for (const std::string& n : o.names) opts.emplace_back(n, o.help);
    const auto subs = subcommands_of(c, commands);
    s += fmt::format("    \"{}\")\n      if [[ $PREFIX == -* ]]; then items=({}); _describe option items; return; fi\n",
                     c.path, zsh_described(opts));
    if (!subs.empty())
      s += fmt::format("      items=({}); _describe command items; return ;;\n", zsh_described(subs));
    else
      s += "      ;;\n";
  }
  // Autoloaded from $fpath (compinit): complete now; sourced (source <(tlio completion zsh)):
  // register the function.
  s += "  esac\n  _files\n}\n"
       "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then _tlio \"$@\"; else compdef _tlio tlio; fi\n";
  return s;
}

std::string fish_quote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) {
    if (ch == '\'' || ch == '\\') out += '\\';
    out += ch == '\n' ? ' ' : ch;
  }
  return out + "'";
}

// fish: one `complete` line per command and option, conditioned on the words seen so far.
std::string fish_script(const std::vector<CommandSpec>& commands) {
  std::string s = fmt::format("# fish completion for tlio {} (generated by `tlio completion fish`)\n"
                              "complete -c tlio -f\n", tlio::version());
  std::vector<std::string> tops = top_words(commands);
  const std::string any_top = fmt::format("{}", fmt::join(tops, " "));
  for (const CommandSpec& c : commands) {
    const size_t sp = c.path.find(' ');
    if (sp == std::string::npos)
      s += fmt::format("complete -c tlio -n 'not __fish_seen_subcommand_from {}' -a {} -d {}\n",
                       any_top, c.path, fish_quote(c.description));
    else
      s += fmt::format("complete -c tlio -n '__fish_seen_subcommand_from {}' -a {} -d {}\n",
                       c.path.substr(0, sp), c.path.substr(sp + 1), fish_quote(c.description));
  }
  s += fmt::format("complete -c tlio -n 'not __fish_seen_subcommand_from {}' -a help -d {}\n",
                   any_top, fish_quote("List the commands, or show a command's options"));
  s += fmt::format("complete -c tlio -n '__fish_seen_subcommand_from help' -a '{}'\n", any_top);
  s += fmt::format("complete -c tlio -n '__fish_seen_subcommand_from completion' -a '{}'\n",
                   fmt::join(kShells, " "));
  for (const CommandSpec& c : commands) {
    const size_t sp = c.path.find(' ');
    const std::string when = sp == std::string::npos
                                 ? fmt::format("__fish_seen_subcommand_from {}", c.path)
                                 : fmt::format("__fish_seen_subcommand_from {}; and __fish_seen_subcommand_from {}",
                                               c.path.substr(0, sp), c.path.substr(sp + 1));
    for (const OptionSpec& o : c.options) {
      std::string line = fmt::format("complete -c tlio -n '{}'", when);
      for (const std::string& n : o.names)
        line += n.rfind("--", 0) == 0 ? " -l " + n.substr(2) : " -s " + n.substr(1);
      if (!o.words.empty()) line += fmt::format(" -x -a '{}'", fmt::join(o.words, " "));
      else if (!o.value.empty()) line += " -r -F";
      s += line + " -d " + fish_quote(o.help.substr(0, o.help.find('\n'))) + "\n";
    }
    if (!c.positionals.empty()) s += fmt::format("complete -c tlio -n '{}' -F\n", when);
  }
  return s;
}

// roff: backslashes, leading dots and quotes, and hyphens as the man macros want them.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char ch : text) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    if (ch == '\\') out += "\\e";
    else if (ch == '-') out += "\\-";
    else out += ch;
    line_start = ch == '\n';
  }
  return out;
}

}  // namespace

std::string man_page(CLI::App& app) {
  std::vector<CommandSpec> commands;
  collect(app, "", commands);
  std::string s = fmt::format(
      ".TH TLIO 1 \"\" \"tlio {0}\" \"User Commands\"\n"
      ".SH NAME\ntlio \\- strict, fast safetensors tool\n"
      ".SH SYNOPSIS\n.B tlio\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] ...\n.br\n.B tlio help\n[\\fICOMMAND\\fR]\n"
      ".SH DESCRIPTION\n{1}\n"
      ".SH COMMANDS\n",
      tlio::version(),
      roff("tlio validates, inspects, converts, edits, quantizes and compares model weight files in "
           "the safetensors format, reads model directories and sharded checkpoints, imports "
           "PyTorch checkpoints without running their pickle, and reads any of them over "
           "http(s). Every output is written atomically: a temporary beside the target, synced, "
           "renamed over it."));
  for (const CommandSpec& c : commands) {
    std::string synopsis = "tlio " + c.path;
    if (!c.options.empty()) synopsis += " [OPTIONS]";
    for (const PositionalSpec& p : c.positionals)
      synopsis += " " + std::string(p.required ? "" : "[") + p.name + (p.many ? "..." : "") +
                  (p.required ? "" : "]");
    s += fmt::format(".SS \"{}\"\n{}\n", roff(synopsis), roff(c.description));
    for (const PositionalSpec& p : c.positionals)
      s += fmt::format(".TP\n\\fI{}\\fR\n{}\n", roff(p.name), roff(p.help));
    for (const OptionSpec& o : c.options) {
      std::string names;
      for (const std::string& n : o.names) names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
      if (!o.value.empty()) names += " \\fI" + roff(o.value) + "\\fR";
      s += fmt::format(".TP\n{}\n{}\n", names, roff(o.help));
    }
    if (!c.footer.empty()) s += fmt::format(".PP\n.nf\n{}\n.fi\n", roff(c.footer));
  }
  s += ".SH EXIT STATUS\n" +
       roff("0: success. 1: an invalid or unreadable input, or a failed operation. 2: a usage "
            "error (an unknown command or option, a bad value, a slice past a tensor's end). 130, "
            "143, 129: stopped by SIGINT, SIGTERM or SIGHUP, after every unfinished output was "
            "removed.") +
       "\n.SH ENVIRONMENT\n.TP\n.B HF_TOKEN\n" +
       roff("Bearer token for http(s) inputs when --token is not given; sent to the URL's own host "
            "only, never printed.") +
       "\n.SH SEE ALSO\n" + roff("tlio help COMMAND; tlio completion bash|zsh|fish; docs/cli.md in the "
                                "source tree.") +
       "\n";
  return s;
}

void add_completion(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  cmd->footer("Completes commands, options, dtype and scheme names, and file names.\n\n"
              "Examples:\n"
              "  source <(tlio completion bash)                 # this shell; or, for good:\n"
              "  tlio completion bash > ~/.local/share/bash-completion/completions/tlio\n"
              "  tlio completion zsh > \"${fpath[1]}/_tlio\"\n"
              "  tlio completion fish > ~/.config/fish/completions/tlio.fish");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("SHELL", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember(kShells));
  cmd->callback([&app, shell, &exit_code] {
    std::vector<CommandSpec> commands;
    collect(app, "", commands);
    const std::string script = *shell == "bash" ? bash_script(commands)
                               : *shell == "zsh" ? zsh_script(commands)
                                                 : fish_script(commands);
    fmt::print("{}", script);
    exit_code = kExitOk;
  });
}

}  // namespace tlio::cli
