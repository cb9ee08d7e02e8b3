// Tests ParseDaemonArgs: every flag given on the command line and as a config key lands in its
// option, the defaults, and each refusal with the line ecd prints.
#include "daemon/daemon_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ecd::daemon {
namespace {

// One flag: its name, a value other than its default (empty for a switch), and what must hold
// of the options parsed with it.
struct FlagCase {
  std::string flag;
  std::string value;
  std::function<bool(const DaemonOptions&)> holds;
};

const std::vector<FlagCase>& Cases() {
  using O = const DaemonOptions&;
  static const auto* cases = new std::vector<FlagCase>{
      {"--data-dir", "/srv/ecd", [](O o) { return o.store.data_dir == "/srv/ecd"; }},
      {"--devices", "12", [](O o) { return o.store.device_count == 12; }},
      {"--device-size", "3G", [](O o) { return o.store.device_size == (3ull << 30); }},
      {"--lba-size", "512", [](O o) { return o.store.lba_size == 512; }},
      {"--block-size", "256K", [](O o) { return o.store.default_block_size == (256u << 10); }},
      {"--data-blocks", "6", [](O o) { return o.store.default_data_blocks == 6; }},
      {"--parity-blocks", "3", [](O o) { return o.store.default_parity_blocks == 3; }},
      {"--max-stripe-memory", "1G", [](O o) { return o.store.max_stripe_bytes == (1ull << 30); }},
      {"--fs-reserve", "1G", [](O o) { return o.store.fs_reserve_bytes == (1ull << 30); }},
      {"--flush-bytes", "2G", [](O o) { return o.store.flush_bytes == (2ull << 30); }},
      {"--start-with-missing-devices", "", [](O o) { return o.store.start_with_missing_devices; }},
      {"--memory-limit", "1G",
       [](O o) { return o.store.memory_limit == (1ull << 30) - kFixedMemory; }},
      {"--dma-arena", "64M", [](O o) { return o.store.dma_arena_bytes == (64u << 20); }},
      {"--max-memory-waiters", "7", [](O o) { return o.store.memory_waiters == 7; }},
      {"--memory-wait", "2.5", [](O o) { return o.store.memory_wait == absl::Milliseconds(2500); }},
      {"--ec-workers", "5", [](O o) { return o.store.ec_workers == 5; }},
      {"--stripes-in-flight", "9", [](O o) { return o.store.stripes_in_flight == 9; }},
      {"--ec-pin-workers", "false", [](O o) { return !o.store.ec_pin_workers; }},
      {"--nvme-queue-depth", "128",
       [](O o) { return o.store.nvme.controller.queue_entries == 128; }},
      {"--nvme-host-memory", "16M",
       [](O o) { return o.store.nvme.host_memory_bytes == (16u << 20); }},
      {"--nvme-page-size", "16K", [](O o) { return o.store.nvme.page_size == (16u << 10); }},
      {"--nvme-mdts", "6", [](O o) { return o.store.nvme.controller.mdts == 6; }},
      {"--nvme-direct", "false", [](O o) { return !o.store.nvme.controller.direct; }},
      {"--listen", "127.0.0.1:0", [](O o) { return o.serving.listen == "127.0.0.1:0"; }},
      {"--unix-socket", "/run/x.sock", [](O o) { return o.serving.unix_socket == "/run/x.sock"; }},
      {"--tls-cert", "/c.pem", [](O o) { return o.serving.tls.cert_file == "/c.pem"; }},
      {"--tls-key", "/k.pem", [](O o) { return o.serving.tls.key_file == "/k.pem"; }},
      {"--tls-client-ca", "/ca.pem", [](O o) { return o.serving.tls.client_ca_file == "/ca.pem"; }},
      {"--insecure", "", [](O o) { return o.serving.tls.insecure; }},
      {"--tokens-file", "/t", [](O o) { return o.serving.tokens_file == "/t"; }},
      {"--port-file", "/p", [](O o) { return o.serving.port_file == "/p"; }},
      {"--metrics-listen", "127.0.0.1:0",
       [](O o) { return o.serving.metrics_listen == "127.0.0.1:0"; }},
      {"--metrics-port-file", "/mp", [](O o) { return o.serving.metrics_port_file == "/mp"; }},
      {"--max-connection-idle", "30s",
       [](O o) { return o.serving.max_connection_idle == absl::Seconds(30); }},
      {"--stream-idle-timeout", "2m",
       [](O o) { return o.serving.stream_idle_timeout == absl::Minutes(2); }},
      {"--max-connections", "99", [](O o) { return o.serving.max_connections == 99; }},
      {"--log-level", "warn", [](O o) { return o.log_level == LogLevel::kWarning; }},
      {"--rebuild-rate", "200M", [](O o) { return o.repair.rate_bytes_per_sec == (200u << 20); }},
      {"--repair-delay", "1h30m", [](O o) { return o.repair.repair_delay == absl::Minutes(90); }},
      {"--scrub-interval-hours", "12", [](O o) { return o.scrub.interval == absl::Hours(12); }},
      {"--scrub-rate", "0", [](O o) { return o.scrub.rate_bytes_per_sec == 0; }},
      {"--scrub-repair", "false", [](O o) { return !o.scrub.repair; }},
      {"--cxl-log-capacity", "9", [](O o) { return o.cxl.device.capacity[3] == 9; }},
      {"--cxl-poll-interval", "0.5",
       [](O o) { return o.cxl.poll_interval == absl::Milliseconds(500); }},
      {"--cxl-interrupt-mode", "fw",
       [](O o) { return o.cxl.initial_mode == cxl::InterruptMode::kFwInterrupt; }},
      {"--cxl-media-error", "ignore",
       [](O o) { return o.policy.media_error == repair::PolicyAction::kIgnore; }},
      {"--cxl-module-critical", "fail",
       [](O o) { return o.policy.module_critical == repair::PolicyAction::kFail; }},
      {"--cxl-fatal", "evacuate",
       [](O o) { return o.policy.fatal == repair::PolicyAction::kEvacuate; }},
      {"--cxl-other", "rebuild",
       [](O o) { return o.policy.other == repair::PolicyAction::kRebuildRange; }},
      {"--cxl-life-used-critical", "80", [](O o) { return o.policy.life_used_critical == 80u; }},
      {"--cxl-temperature-critical", "70", [](O o) { return o.policy.temperature_critical == 70; }},
      {"--max-name-length", "200",
       [](O o) { return o.limits.max_name_length == 200 && o.store.max_name_length == 200; }},
      {"--max-object-size", "2G", [](O o) { return o.limits.max_object_size == (2ull << 30); }},
      {"--max-message-size", "4M", [](O o) { return o.limits.max_message_size == (4u << 20); }},
      {"--max-streams-per-client", "3", [](O o) { return o.limits.max_streams_per_client == 3; }},
      {"--max-streams", "40", [](O o) { return o.limits.max_streams == 40; }},
      {"--max-ingest-records", "77", [](O o) { return o.limits.max_ingest_records == 77; }},
      {"--rebuild-catalog", "", [](O o) { return o.mode == DaemonMode::kRebuildCatalog; }},
      {"--check-catalog", "", [](O o) { return o.mode == DaemonMode::kCheckCatalog; }},
      {"--json", "", [](O o) { return o.json; }},
      {"--fault-inject", "2=write:eio",
       [](O o) { return o.testing.faults.size() == 1 && o.testing.faults.count(2) == 1; }},
      {"--fault-seed", "42", [](O o) { return o.testing.fault_seed == 42; }},
      {"--fault-power-cut-journal", "/j", [](O o) { return o.testing.power_cut_journal == "/j"; }},
  };
  return *cases;
}

absl::StatusOr<DaemonArgs> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "ecd");
  return ParseDaemonArgs(args);
}

// The message ParseDaemonArgs refuses `args` with ("" when it accepts them).
std::string RefusalOf(std::vector<std::string> args) {
  absl::StatusOr<DaemonArgs> parsed = Parse(std::move(args));
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

// A config file in the test's temporary directory holding `text`; removed by the destructor.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    path_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/ecd-options-" +
            std::to_string(::getpid()) + ".conf";
    std::ofstream(path_) << text;
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(DaemonOptionsTest, EveryFlagOnTheCommandLineLandsInItsOption) {
  for (const FlagCase& c : Cases()) {
    std::vector<std::string> args = {c.flag};
    if (!c.value.empty()) args.push_back(c.value);
    absl::StatusOr<DaemonArgs> parsed = Parse(args);
    ASSERT_TRUE(parsed.ok()) << c.flag << ": " << parsed.status();
    EXPECT_TRUE(c.holds(parsed->options)) << c.flag << " " << c.value;
    EXPECT_FALSE(parsed->help.has_value());
  }
}

TEST(DaemonOptionsTest, EveryFlagAsAConfigKeyLandsInItsOption) {
  for (const FlagCase& c : Cases()) {
    const std::string key = c.flag.substr(2);
    ConfigFile config(key + " = " + (c.value.empty() ? "true" : "\"" + c.value + "\"") + "\n");
    absl::StatusOr<DaemonArgs> parsed = Parse({"--config", config.path()});
    ASSERT_TRUE(parsed.ok()) << key << ": " << parsed.status();
    EXPECT_TRUE(c.holds(parsed->options)) << key << " = " << c.value;
  }
}

TEST(DaemonOptionsTest, TheTableCoversEveryFlagInTheHelp) {
  absl::StatusOr<DaemonArgs> parsed = Parse({"--help"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->help.has_value());
  std::set<std::string> in_help;
  const std::regex flag(R"(^\s+(?:-\w,)?(--[a-z0-9-]+))");
  std::istringstream lines(*parsed->help);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, flag)) in_help.insert(m[1]);
  }
  std::set<std::string> tested = {"--help", "--config"};
  for (const FlagCase& c : Cases()) tested.insert(c.flag);
  EXPECT_EQ(in_help, tested);
}

TEST(DaemonOptionsTest, DefaultsAreTheDocumentedOnes) {
  absl::StatusOr<DaemonArgs> parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const DaemonOptions& o = parsed->options;
  EXPECT_EQ(o.mode, DaemonMode::kServe);
  EXPECT_FALSE(o.json);
  EXPECT_EQ(o.log_level, LogLevel::kInfo);
  EXPECT_EQ(o.store.data_dir, "./var/ecd");
  EXPECT_EQ(o.store.device_count, 8u);
  EXPECT_EQ(o.store.device_size, 1ull << 30);
  EXPECT_EQ(o.store.lba_size, 4096u);
  EXPECT_EQ(o.store.default_block_size, 1u << 20);
  EXPECT_EQ(o.store.default_data_blocks, 4u);
  EXPECT_EQ(o.store.default_parity_blocks, 2u);
  EXPECT_EQ(o.store.max_stripe_bytes, 512u << 20);
  EXPECT_EQ(o.store.fs_reserve_bytes, 256u << 20);
  EXPECT_EQ(o.store.flush_bytes, 0u);
  EXPECT_FALSE(o.store.start_with_missing_devices);
  EXPECT_EQ(o.store.memory_limit, (512u << 20) - kFixedMemory);
  EXPECT_EQ(o.store.dma_arena_bytes, 512u << 20);
  EXPECT_EQ(o.store.memory_waiters, 64u);
  EXPECT_EQ(o.store.memory_wait, absl::Seconds(60));
  EXPECT_EQ(o.store.ec_workers, 2);
  EXPECT_EQ(o.store.stripes_in_flight, 0u);
  EXPECT_TRUE(o.store.ec_pin_workers);
  EXPECT_EQ(o.store.max_name_length, 1024u);
  EXPECT_EQ(o.store.nvme.controller.queue_entries, 64u);
  EXPECT_EQ(o.store.nvme.controller.mdts, 8u);
  EXPECT_TRUE(o.store.nvme.controller.direct);
  EXPECT_EQ(o.store.nvme.host_memory_bytes, 8u << 20);
  EXPECT_EQ(o.store.nvme.page_size, 4096u);
  EXPECT_EQ(o.serving.listen, "127.0.0.1:7400");
  EXPECT_EQ(o.serving.unix_socket, "./var/ecd/ecd.sock");
  EXPECT_TRUE(o.serving.tls.cert_file.empty());
  EXPECT_FALSE(o.serving.tls.insecure);
  EXPECT_TRUE(o.serving.tokens_file.empty());
  EXPECT_TRUE(o.serving.port_file.empty());
  EXPECT_EQ(o.serving.metrics_listen, "127.0.0.1:9400");
  EXPECT_EQ(o.serving.max_connection_idle, absl::Minutes(5));
  EXPECT_EQ(o.serving.stream_idle_timeout, absl::Seconds(60));
  EXPECT_EQ(o.serving.max_connections, 0u);
  EXPECT_EQ(o.repair.rate_bytes_per_sec, 0u);
  EXPECT_EQ(o.repair.repair_delay, absl::Minutes(10));
  EXPECT_EQ(o.scrub.interval, absl::Hours(168));
  EXPECT_EQ(o.scrub.rate_bytes_per_sec, 32u << 20);
  EXPECT_TRUE(o.scrub.repair);
  EXPECT_EQ(o.cxl.device.capacity[0], 64u);
  EXPECT_EQ(o.cxl.poll_interval, absl::Seconds(1));
  EXPECT_EQ(o.cxl.initial_mode, cxl::InterruptMode::kMsi);
  EXPECT_EQ(o.policy.media_error, repair::PolicyAction::kRebuildRange);
  EXPECT_EQ(o.policy.module_critical, repair::PolicyAction::kEvacuate);
  EXPECT_EQ(o.policy.fatal, repair::PolicyAction::kFail);
  EXPECT_EQ(o.policy.other, repair::PolicyAction::kCount);
  EXPECT_EQ(o.policy.life_used_critical, 95u);
  EXPECT_EQ(o.policy.temperature_critical, 85);
  EXPECT_EQ(o.limits.max_object_size, 1ull << 40);
  EXPECT_EQ(o.limits.max_message_size, 16u << 20);
  EXPECT_EQ(o.limits.max_streams_per_client, 32u);
  EXPECT_EQ(o.limits.max_streams, 128u);
  EXPECT_EQ(o.limits.max_ingest_records, 10000u);
  EXPECT_TRUE(o.testing.faults.empty());
  EXPECT_EQ(o.testing.fault_seed, 1u);
  EXPECT_TRUE(o.testing.power_cut_journal.empty());
}

TEST(DaemonOptionsTest, UnixSocketNoneAndDefaultFollowTheDataDir) {
  EXPECT_EQ(Parse({"--data-dir", "/d"})->options.serving.unix_socket, "/d/ecd.sock");
  EXPECT_EQ(Parse({"--unix-socket", "none"})->options.serving.unix_socket, "");
  EXPECT_EQ(Parse({"--memory-limit", "0"})->options.store.memory_limit, 0u);
  EXPECT_EQ(Parse({"--log-level", "debug"})->options.log_level, LogLevel::kDebug);
  EXPECT_EQ(Parse({"--log-level", "error"})->options.log_level, LogLevel::kError);
  EXPECT_EQ(Parse({"--cxl-interrupt-mode", "none"})->options.cxl.initial_mode,
            cxl::InterruptMode::kNone);
}

TEST(DaemonOptionsTest, TheShippedConfigFileParses) {
  absl::StatusOr<DaemonArgs> parsed =
      Parse({"--config", std::string(ECD_SOURCE_DIR) + "/deploy/ecd.conf"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->options.store.data_dir, "/var/lib/ecd");
  EXPECT_EQ(parsed->options.store.device_size, 64ull << 30);
  EXPECT_EQ(parsed->options.serving.unix_socket, "/run/ecd/ecd.sock");
}

TEST(DaemonOptionsTest, EachRefusalNamesItsFlag) {
  const struct {
    std::vector<std::string> args;
    std::string message;  // a part of the refusal
  } refusals[] = {
      {{"--no-such-flag"}, "--no-such-flag; see ecd --help"},
      {{"--devices", "many"}, "--devices"},
      {{"--rebuild-catalog", "--check-catalog"}, "excludes"},
      {{"--log-level", "loud"}, "--log-level must be debug, info, warn or error"},
      {{"--max-connection-idle", "soon"}, "--max-connection-idle: \"soon\" is not a duration"},
      {{"--max-connection-idle", "600h"}, "--max-connection-idle must be at most 596h"},
      {{"--stream-idle-timeout", "-1s"}, "--stream-idle-timeout: \"-1s\" is negative"},
      {{"--repair-delay", "inf"}, "--repair-delay: \"inf\" is not a duration"},
      {{"--memory-limit", "64M"}, "--memory-limit must be more than the 96M"},
      {{"--memory-limit", "lots"}, "--memory-limit: "},
      {{"--dma-arena", "x"}, "--dma-arena: "},
      {{"--device-size", "1Q"}, "--device-size: "},
      {{"--fs-reserve", "x"}, "--fs-reserve: "},
      {{"--block-size", "x"}, "--block-size: "},
      {{"--max-stripe-memory", "x"}, "--max-stripe-memory: "},
      {{"--flush-bytes", "x"}, "--flush-bytes: "},
      {{"--lba-size", "x"}, "--lba-size: "},
      {{"--lba-size", "128K"}, "--lba-size must be at most 64K"},
      {{"--nvme-queue-depth", "100"}, "--nvme-queue-depth must be a power of two"},
      {{"--nvme-queue-depth", "8192"}, "--nvme-queue-depth"},
      {{"--nvme-host-memory", "x"}, "--nvme-host-memory: "},
      {{"--nvme-page-size", "3K"}, "--nvme-page-size must be a power of two from 4K to 64K"},
      {{"--nvme-host-memory", "8K"}, "--nvme-host-memory must hold at least 4 pages"},
      {{"--nvme-mdts", "15"}, "--nvme-mdts"},
      {{"--unix-socket", "/" + std::string(120, 'x')}, "give a shorter --unix-socket"},
      {{"--rebuild-rate", "fast"}, "--rebuild-rate: "},
      {{"--scrub-rate", "x"}, "--scrub-rate: "},
      {{"--scrub-interval-hours", "-1"}, "--scrub-interval-hours"},
      {{"--stripes-in-flight", "1"}, "must be 0 or 2..64"},
      {{"--ec-workers", "0"}, "--ec-workers"},
      {{"--max-memory-waiters", "0"}, "--max-memory-waiters"},
      {{"--memory-wait", "-1"}, "--memory-wait"},
      {{"--cxl-log-capacity", "0"}, "--cxl-log-capacity"},
      {{"--cxl-poll-interval", "4000"}, "--cxl-poll-interval"},
      {{"--cxl-interrupt-mode", "poll"}, "--cxl-interrupt-mode"},
      {{"--cxl-media-error", "panic"}, "--cxl-media-error"},
      {{"--cxl-life-used-critical", "101"}, "--cxl-life-used-critical"},
      {{"--max-object-size", "0"}, "--max-object-size must be more than 0"},
      {{"--max-object-size", "x"}, "--max-object-size: "},
      {{"--max-message-size", "1M"}, "--max-message-size must be from 2M"},
      {{"--max-message-size", "x"}, "--max-message-size: "},
      {{"--max-ingest-records", "0"}, "--max-ingest-records"},
      {{"--fault-inject", "2=explode"}, "--fault-inject: "},
      {{"--config", "/nonexistent/ecd.conf"}, "/nonexistent/ecd.conf"},
  };
  for (const auto& r : refusals) {
    const std::string message = RefusalOf(r.args);
    EXPECT_NE(message.find(r.message), std::string::npos)
        << r.args[0] << ": refused with \"" << message << "\", expected \"" << r.message << "\"";
  }
}

TEST(DaemonOptionsTest, AnUnknownConfigKeyIsRefused) {
  ConfigFile config("data-dir = \"/d\"\nno-such-key = 1\n");
  EXPECT_NE(RefusalOf({"--config", config.path()}).find("no-such-key"), std::string::npos);
}

}  // namespace
}  // namespace ecd::daemon
