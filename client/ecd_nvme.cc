// ecd-nvme: offline NVMe tools: PRP debugging for operators, and power cuts for tests.
//
//   ecd-nvme prp-walk [FILE|-] [--pretty]
//   ecd-nvme power-cut DIR [--seed N] [--sector BYTES]
//
// prp-walk reads a JSON command description (see client/prp_walk.h and docs/nvme.md) and prints
// the resolved data segments and PRP fetch-manager events, or the NVMe status the command fails
// with, as JSON on stdout. Exit status: 0 when a report was printed (whatever the NVMe status),
// 2 for a bad invocation or document, 3 when the input cannot be read.
//
// power-cut replays the undo journals an ecd started with --fault-power-cut-journal DIR left
// behind when it was killed: every write not covered by a flush vanishes, survives or is torn,
// from the seed (lib/fault/power_cut.h, docs/fuzzing.md). One line per journal on stdout. Exit
// status: 0 when every journal was applied, 2 for a bad invocation or journal, 3 for an I/O
// error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "client/prp_walk.h"
#include "lib/fault/power_cut.h"

namespace {

int PowerCut(const std::string& dir, uint64_t seed, uint32_t sector) {
  auto cut = ecd::store::ApplyPowerCutToDir(dir, {.seed = seed, .sector_size = sector});
  if (!cut.ok()) {
    std::cerr << "ecd-nvme: power-cut: " << cut.status().message() << "\n";
    return absl::IsInternal(cut.status()) ? 3 : 2;
  }
  for (const auto& [name, r] : *cut) {
    std::printf(
        "%s: %llu unflushed writes: %llu vanished, %llu survived, %llu torn; %llu bytes "
        "restored%s\n",
        name.c_str(), static_cast<unsigned long long>(r.writes),
        static_cast<unsigned long long>(r.vanished), static_cast<unsigned long long>(r.survived),
        static_cast<unsigned long long>(r.torn), static_cast<unsigned long long>(r.bytes_restored),
        r.partial_tail ? " (a partial last record: its write was never issued)" : "");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ecd-nvme: NVMe PRP debugging, and power cuts for tests"};
  app.require_subcommand(1);
  std::string input = "-";
  bool pretty = false;
  CLI::App* walk = app.add_subcommand(
      "prp-walk", "resolve a command's PRPs from a JSON description and print the result");
  walk->add_option("file", input, "JSON description, or - for stdin")->capture_default_str();
  walk->add_flag("--pretty", pretty, "indent the JSON output");
  std::string journal_dir;
  uint64_t seed = 1;
  uint32_t sector = 512;
  CLI::App* cut =
      app.add_subcommand("power-cut",
                         "TESTING ONLY: cut the power of the namespaces whose undo journals (ecd "
                         "--fault-power-cut-journal DIR) are in DIR, after ecd was killed");
  cut->add_option("dir", journal_dir, "the journal directory")->required();
  cut->add_option("--seed", seed, "decides each unflushed write's fate")->capture_default_str();
  cut->add_option("--sector", sector, "the unit of a torn write, 512 to the LBA size")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ecd-nvme: " << e.what() << " (see ecd-nvme --help)\n";
    return 2;
  }
  if (cut->parsed()) return PowerCut(journal_dir, seed, sector);
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
