#include "server/daemon/command_line.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/internal/program_name.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

extern char** environ;

namespace distarray::daemon {
namespace {

// Nested --flagfile lines deeper than this are a loop.
constexpr int kMaxFlagfileDepth = 8;

// absl's usage flags, handled by absl's usage printer once every flag is read.
bool IsUsageFlag(absl::string_view name) {
  for (absl::string_view usage : {"help", "helpfull", "helpshort", "helppackage", "helpon",
                                  "helpmatch", "version", "only_check_args"}) {
    if (name == usage) return true;
  }
  return false;
}

class Parser {
 public:
  explicit Parser(CommandLineSources* sources) : sources_(sources) {}
  bool usage_requested() const { return usage_requested_; }

  // `args` without the program name; `origin` says where they came from, for messages.
  absl::Status Apply(const std::vector<std::string>& args, const std::string& origin, int depth) {
    for (size_t i = 0; i < args.size(); ++i) {
      absl::string_view arg = args[i];
      if (arg == "--") {
        if (i + 1 < args.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat(origin, ": unexpected argument '", args[i + 1], "' after --"));
        }
        break;
      }
      if (arg.size() < 2 || arg[0] != '-') {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": unexpected argument '", arg,
                                                       "' (flags are written --name=value)"));
      }
      if (!absl::ConsumePrefix(&arg, "--")) absl::ConsumePrefix(&arg, "-");
      const size_t eq = arg.find('=');
      const bool has_value = eq != absl::string_view::npos;
      const std::string name(arg.substr(0, eq));
      std::string value = has_value ? std::string(arg.substr(eq + 1)) : std::string();
      if (IsUsageFlag(name)) {
        absl::flags_internal::DeduceUsageFlags(name, value);
        usage_requested_ = true;
        continue;
      }
      if (name == "fromenv" || name == "tryfromenv" || name == "undefok") {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": --", name, " is not supported; set DISTARRAY_<FLAG> variables instead"));
      }
      if (name == "flagfile") {
        if (!has_value) {
          if (i + 1 >= args.size()) {
            return absl::InvalidArgumentError(
                absl::StrCat(origin, ": --flagfile needs a value (--flagfile=FILE)"));
          }
          value = args[++i];
        }
        for (absl::string_view file : absl::StrSplit(value, ',', absl::SkipEmpty())) {
          RETURN_IF_ERROR(ApplyFile(std::string(file), depth + 1));
        }
        continue;
      }
      absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag == nullptr && absl::StartsWith(name, "no") && !has_value) {
        flag = absl::FindCommandLineFlag(name.substr(2));
        if (flag != nullptr && flag->IsOfType<bool>()) {
          value = "false";
        } else {
          flag = nullptr;
        }
      } else if (flag != nullptr && !has_value) {
        if (flag->IsOfType<bool>()) {
          value = "true";
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return absl::InvalidArgumentError(
              absl::StrCat(origin, ": --", name, " needs a value (--", name, "=VALUE)"));
        }
      }
      if (flag == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ": unknown flag --", name, " (distarrayd --help lists them)"));
      }
      std::string error;
      if (!flag->ParseFrom(value, &error)) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": --", name, ": ", error));
      }
      if (sources_ != nullptr) sources_->from_env.erase(std::string(flag->Name()));
    }
    return absl::OkStatus();
  }

  // One argument per line; blank lines and lines starting with '#' are skipped.
  absl::Status ApplyFile(const std::string& path, int depth) {
    if (depth > kMaxFlagfileDepth) {
      return absl::InvalidArgumentError(absl::StrCat("--flagfile: more than ", kMaxFlagfileDepth,
                                                     " nested flag files at ", path));
    }
    std::ifstream in(path);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--flagfile: cannot read ", path));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      absl::string_view text = absl::StripAsciiWhitespace(line);
      if (text.empty() || text[0] == '#') continue;
      lines.emplace_back(text);
    }
    return Apply(lines, absl::StrCat("flag file ", path), depth);
  }

 private:
  CommandLineSources* sources_;
  bool usage_requested_ = false;
};

}  // namespace

std::string CommandLineSources::Explain(absl::string_view error) const {
  absl::string_view rest = error;
  if (absl::ConsumePrefix(&rest, "--")) {
    const std::string name(rest.substr(0, rest.find(':')));
    if (auto it = from_env.find(name); it != from_env.end()) {
      return absl::StrCat(error, " (set by environment variable ", it->second, ")");
    }
  }
  return std::string(error);
}

bool IsDaemonFlagFile(const std::string& file) { return absl::StrContains(file, "server/"); }

absl::Status ParseDaemonCommandLine(int argc, char** argv, CommandLineSources* sources) {
  // The environment first, so the command line overrides it.
  std::string env_flagfile;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    absl::string_view text(*entry);
    if (!absl::ConsumePrefix(&text, kEnvPrefix)) continue;
    const size_t eq = text.find('=');
    if (eq == absl::string_view::npos) continue;
    const std::string variable = absl::StrCat(kEnvPrefix, text.substr(0, eq));
    const std::string name = absl::AsciiStrToLower(text.substr(0, eq));
    const std::string value(text.substr(eq + 1));
    if (name == "flagfile") {
      env_flagfile = value;
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr || !IsDaemonFlagFile(flag->Filename())) {
      if (sources != nullptr) sources->ignored_env.push_back(variable);
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", variable, " (--", name, "): ", error));
    }
    if (sources != nullptr) sources->from_env[name] = variable;
  }
  if (argc > 0) absl::flags_internal::SetProgramInvocationName(argv[0]);  // for --help
  Parser parser(sources);
  if (!env_flagfile.empty()) {
    absl::Status status = parser.ApplyFile(env_flagfile, 1);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable DISTARRAY_FLAGFILE: ", status.message()));
    }
  }
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (absl::Status status = parser.Apply(args, "command line", 0); !status.ok()) return status;
  if (parser.usage_requested()) {
    // --help and friends print and end the process. absl exits 1 after help; asking for help
    // is not a failure, so 0.
    absl::flags_internal::HandleUsageFlags(std::cout, absl::ProgramUsageMessage());
    std::cout.flush();
    std::exit(0);
  }
  return absl::OkStatus();
}

}  // namespace distarray::daemon
