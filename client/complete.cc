// Completion candidates, found by walking the CLI11 command tree the way the parser does.
#include "client/complete.h"

#include <algorithm>

namespace ecd::client {
namespace {

// Hidden subcommands and options are in no group.
bool Visible(const CLI::App* sub) { return !sub->get_group().empty(); }

const CLI::App* VisibleSubcommand(const CLI::App& app, const std::string& name) {
  auto found = app.get_subcommands(
      [&](const CLI::App* sub) { return Visible(sub) && sub->get_name() == name; });
  return found.empty() ? nullptr : found.front();
}

// The option `word` ("--name", "--name=value", "-o") names in `app` or a command above it (the
// options of the commands above are accepted after a subcommand too).
const CLI::Option* FindOption(const CLI::App& app, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  for (const CLI::App* at = &app; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option* option = at->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

// Whether the word after `word` is the value of the option it names.
bool TakesNextWord(const CLI::App& app, const std::string& word) {
  const CLI::Option* option = FindOption(app, word);
  return option != nullptr && option->get_expected_max() > 0 && word.find('=') == std::string::npos;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands(Visible)) names.push_back(sub->get_name());
  return names;
}

void AddOnce(std::vector<std::string>& names, std::string name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
}

// The visible named options of `app` and of the commands above it, "--long" and "-s" forms.
std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* at = &app; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* option : at->get_options()) {
      if (option->get_group().empty()) continue;
      for (const std::string& l : option->get_lnames()) AddOnce(names, "--" + l);
      for (const std::string& s : option->get_snames()) AddOnce(names, "-" + s);
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> CompletionCandidates(const CLI::App& app,
                                              const std::vector<std::string>& words) {
  if (words.empty()) return SubcommandNames(app);
  const CLI::App* command = &app;
  bool value_next = false;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (value_next) {
      value_next = false;
    } else if (word.size() > 1 && word[0] == '-') {
      value_next = TakesNextWord(*command, word);
    } else if (const CLI::App* sub = VisibleSubcommand(*command, word)) {
      command = sub;
    }
  }
  if (value_next) return {};
  if (words.back().rfind('-', 0) == 0) return OptionNames(*command);
  return SubcommandNames(*command);
}

}  // namespace ecd::client
