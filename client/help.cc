// The expanding help formatter.
#include "client/help.h"

namespace ecd::client {
namespace {

// Hidden commands and options are in no group.
std::vector<const CLI::App*> VisibleSubcommands(const CLI::App* app) {
  return app->get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

bool IsHelp(const CLI::Option* option) {
  return option->check_lname("help") || option->check_lname("help-all");
}

// The options a command block lists: positionals first, then the named ones but help.
std::vector<const CLI::Option*> ListedOptions(const CLI::App* command, bool positional) {
  return command->get_options([positional](const CLI::Option* o) {
    return o->get_positional() == positional && !o->get_group().empty() && !IsHelp(o);
  });
}

// "NAME", "[NAME]" or "[ID...]".
std::string PositionalUsage(const CLI::Option* option) {
  std::string name = option->get_name(true, false);
  if (option->get_items_expected_max() > 1) name += "...";
  return option->get_required() ? name : "[" + name + "]";
}

}  // namespace

std::string CommandPath(const CLI::App* command) {
  std::string path = command->get_name();
  for (const CLI::App* at = command->get_parent(); at != nullptr && at->get_parent() != nullptr;
       at = at->get_parent()) {
    path = at->get_name() + " " + path;
  }
  return path;
}

std::string CommandUsage(const CLI::App* command) {
  const CLI::App* root = command;
  while (root->get_parent() != nullptr) root = root->get_parent();
  std::string usage = root->get_name() + " " + CommandPath(command);
  for (const CLI::Option* option : ListedOptions(command, true)) {
    usage += " " + PositionalUsage(option);
  }
  if (!ListedOptions(command, false).empty()) usage += " [OPTIONS]";
  if (!VisibleSubcommands(command).empty()) usage += " SUBCOMMAND";
  return usage;
}

std::string ExpandingFormatter::make_subcommands(const CLI::App* app,
                                                 CLI::AppFormatMode mode) const {
  if (mode != CLI::AppFormatMode::All) return Formatter::make_subcommands(app, mode);
  std::string out = Formatter::make_subcommands(app, CLI::AppFormatMode::Normal);
  for (const CLI::App* sub : VisibleSubcommands(app)) out += MakeCommandBlocks(sub);
  return out;
}

std::string ExpandingFormatter::MakeCommandBlocks(const CLI::App* command) const {
  std::string out = "\n" + CommandUsage(command) + ":\n  " + command->get_description() + "\n\n";
  for (const CLI::Option* option : ListedOptions(command, true)) out += make_option(option, true);
  for (const CLI::Option* option : ListedOptions(command, false)) out += make_option(option, false);
  for (const CLI::App* sub : VisibleSubcommands(command)) out += MakeCommandBlocks(sub);
  return out;
}

}  // namespace ecd::client
