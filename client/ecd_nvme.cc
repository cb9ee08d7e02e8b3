// ecd-nvme: offline NVMe debugging tools for operators.
//
//   ecd-nvme prp-walk [FILE|-] [--pretty]
//
// prp-walk reads a JSON command description (see client/prp_walk.h and docs/nvme.md) and prints
// the resolved data segments and PRP fetch-manager events, or the NVMe status the command fails
// with, as JSON on stdout. Exit status: 0 when a report was printed (whatever the NVMe status),
// 2 for a bad invocation or document, 3 when the input cannot be read.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "client/prp_walk.h"

int main(int argc, char** argv) {
  CLI::App app{"ecd-nvme: NVMe PRP debugging tools"};
  app.require_subcommand(1);
  std::string input = "-";
  bool pretty = false;
  CLI::App* walk = app.add_subcommand(
      "prp-walk", "resolve a command's PRPs from a JSON description and print the result");
  walk->add_option("file", input, "JSON description, or - for stdin")->capture_default_str();
  walk->add_flag("--pretty", pretty, "indent the JSON output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ecd-nvme: " << e.what() << " (see ecd-nvme --help)\n";
    return 2;
  }
  std::stringstream text;
  if (input == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream f(input);
    if (!f) {
      std::cerr << "ecd-nvme: cannot read " << input << "\n";
      return 3;
    }
    text << f.rdbuf();
  }
  auto out = ecd::tools::RunPrpWalk(text.str(), pretty);
  if (!out.ok()) {
    std::cerr << "ecd-nvme: " << out.status().message() << "\n";
    return 2;
  }
  std::cout << *out << "\n";
  return 0;
}
