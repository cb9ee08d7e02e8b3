// ecctl's object commands: encode, read, update, recover, scrub, stat, ls, rm and block get, each
// a call of ecd.v1.Objects (the byte streams are client/transfer.h's).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "client/progress.h"
#include "client/transfer.h"
#include "ecd/tools/ecctl.pb.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/printable.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;
namespace tools = ecd::tools;
using ecd::FormatSize;

// Parses a size option that may be empty (0); exit code 2 if it is not a size.
absl::StatusOr<uint64_t> OptionalSize(const char* flag, const std::string& text) {
  if (text.empty()) return 0;
  absl::StatusOr<uint64_t> v = ecd::ParseSize(text);
  if (!v.ok()) return Error(kExitUsage, absl::StrCat(flag, ": ", v.status().message()));
  return *v;
}

// ---- encode

// The options of `ecctl encode`.
struct EncodeArgs {
  std::string file;
  std::string name;
  uint32_t m = 0;
  uint32_t k = 0;
  std::string matrix = "cauchy";
  std::string block_size;
};

// The header of an encode; exit code 2 for a bad --matrix or --block-size.
absl::StatusOr<v1::EncodeHeader> EncodeHeaderOf(const EncodeArgs& a) {
  v1::EncodeHeader h;
  h.set_name(a.name);
  if (h.name().empty()) {
    if (a.file == "-") return Error(kExitUsage, "encode from stdin needs --name");
    h.set_name(std::filesystem::path(a.file).filename().string());
  }
  h.set_data_blocks(a.m);
  h.set_parity_blocks(a.k);
  if (a.matrix == "cauchy") {
    h.set_matrix(v1::MATRIX_TYPE_CAUCHY);
  } else if (a.matrix == "vandermonde") {
    h.set_matrix(v1::MATRIX_TYPE_VANDERMONDE);
  } else {
    return Error(kExitUsage,
                 absl::StrCat("--matrix must be cauchy or vandermonde, not \"", a.matrix, "\""));
  }
  if (!a.block_size.empty()) {
    absl::StatusOr<uint64_t> bs = ecd::ParseSize(a.block_size);
    if (!bs.ok()) return Error(kExitUsage, absl::StrCat("--block-size: ", bs.status().message()));
    h.set_block_size(*bs);
  }
  return h;
}

absl::Status Encode(ClientCore& c, const EncodeArgs& a) {
  v1::EncodeRequest request;
  ECCTL_ASSIGN_OR_RETURN(*request.mutable_header(), EncodeHeaderOf(a));
  const std::string name = request.header().name();
  ECCTL_ASSIGN_OR_RETURN(const int fd, OpenInput(a.file));
  // A regular file's size goes in the header: ecd refuses one over its limit before any data.
  if (const std::optional<uint64_t> size = FileSize(fd)) {
    request.mutable_header()->set_size(*size);
  }

  auto context = c.Context();
  v1::EncodeResponse response;
  auto writer = c.RawWriter("/ecd.v1.Objects/Encode", context.get(), &response);
  ProgressBar progress =
      c.Progress(absl::StrCat("encode ", Printable(name)), ProgressUnit::Bytes());
  ECCTL_RETURN_IF_ERROR(StreamFile(fd, a.file, request, *writer, *context, progress));
  CloseInput(fd);
  writer->WritesDone();
  ECCTL_RETURN_IF_ERROR(c.Check(writer->Finish(), absl::StrCat("encode ", Printable(name))));
  progress.Clear();
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  const v1::ObjectInfo& o = response.object();
  std::printf("encoded %s: %s in %llu stripes of %s x %s (%s)\n", Printable(o.name()).c_str(),
              FormatSize(o.size()).c_str(), static_cast<unsigned long long>(o.stripe_count()),
              Shape(o).c_str(), FormatSize(o.block_size()).c_str(), MatrixName(o.matrix()));
  return absl::OkStatus();
}

// ---- read

// The options of `ecctl read`.
struct ReadArgs {
  std::string name;
  std::string out;
  std::string offset;
  std::string length;
};

absl::Status Read(ClientCore& c, const ReadArgs& a) {
  ECCTL_ASSIGN_OR_RETURN(const uint64_t offset, OptionalSize("--offset", a.offset));
  ECCTL_ASSIGN_OR_RETURN(const uint64_t length, OptionalSize("--length", a.length));
  const ByteRange range{offset, length};
  v1::ReadRequest request;
  request.set_name(a.name);
  request.set_offset(range.offset);
  request.set_length(range.length);
  auto context = c.Context();
  auto reader = c.RawReader("/ecd.v1.Objects/Read", context.get(), request);
  ProgressBar progress =
      c.Progress(absl::StrCat("read ", Printable(a.name)), ProgressUnit::Bytes());
  ECCTL_ASSIGN_OR_RETURN(const Streamed got, SaveStream(c, absl::StrCat("read ", Printable(a.name)),
                                                        *context, *reader, a.out, range, progress));
  progress.Clear();
  if (c.globals().json) {
    tools::ReadResult result;
    result.set_name(a.name);
    result.set_bytes(got.bytes);
    result.set_reconstructed_blocks(got.reconstructed);
    result.set_version(got.version);
    result.set_id(got.id);
    PrintJson(result, SummaryStream(a.out));
    return absl::OkStatus();
  }
  std::fprintf(SummaryStream(a.out), "read %s: %s -> %s (%u blocks reconstructed)\n",
               a.name.c_str(), FormatSize(got.bytes).c_str(), a.out.c_str(), got.reconstructed);
  return absl::OkStatus();
}

// ---- block get

// The options of `ecctl block get`.
struct BlockGetArgs {
  std::string name;
  uint64_t stripe = 0;
  uint32_t index = 0;
  std::string out;
};

absl::Status BlockGet(ClientCore& c, const BlockGetArgs& a) {
  v1::GetBlockRequest request;
  request.set_name(a.name);
  request.set_stripe(a.stripe);
  request.set_index(a.index);
  auto context = c.Context();
  auto reader = c.RawReader("/ecd.v1.Objects/GetBlock", context.get(), request);
  const std::string what =
      absl::StrCat("block get ", Printable(a.name), " stripe ", a.stripe, " index ", a.index);
  ProgressBar progress = c.Progress(what, ProgressUnit::Bytes());
  ECCTL_ASSIGN_OR_RETURN(const Streamed got,
                         SaveStream(c, what, *context, *reader, a.out, ByteRange{}, progress));
  progress.Clear();
  if (c.globals().json) {
    tools::BlockGetResult result;
    result.set_name(a.name);
    result.set_stripe(a.stripe);
    result.set_index(a.index);
    result.set_bytes(got.bytes);
    result.set_reconstructed(got.reconstructed > 0);
    PrintJson(result, SummaryStream(a.out));
    return absl::OkStatus();
  }
  std::fprintf(SummaryStream(a.out), "%s: %s -> %s%s\n", what.c_str(),
               FormatSize(got.bytes).c_str(), a.out.c_str(),
               got.reconstructed ? " (the stored copy was bad: rebuilt from its stripe)" : "");
  return absl::OkStatus();
}

// ---- recover

absl::Status Recover(ClientCore& c, const std::string& name, bool missing_only) {
  v1::RecoverRequest request;
  request.set_name(name);
  request.set_missing_only(missing_only);
  auto context = c.Context();
  auto reader = c.objects().Recover(context.get(), request);
  ProgressBar progress =
      c.Progress(absl::StrCat("recover ", Printable(name)), ProgressUnit::Items("stripes"));
  v1::RecoverProgress p, last;
  while (reader->Read(&p)) {
    last = p;
    progress.Update(p.stripes_done(), p.stripes_total());
  }
  ECCTL_RETURN_IF_ERROR(c.Check(reader->Finish(), absl::StrCat("recover ", Printable(name))));
  progress.Clear();
  if (c.globals().json) {
    PrintJson(last);
    return absl::OkStatus();
  }
  std::printf("recovered %s: %llu stripes %s, %llu blocks read, %llu blocks rebuilt (%s)\n",
              name.c_str(), static_cast<unsigned long long>(last.stripes_done()),
              missing_only ? "walked" : "checked",
              static_cast<unsigned long long>(last.blocks_checked()),
              static_cast<unsigned long long>(last.blocks_rebuilt()),
              FormatSize(last.bytes_rebuilt()).c_str());
  return absl::OkStatus();
}

// ---- scrub

std::string Findings(const v1::ScrubFindings& f) {
  return absl::StrCat(FormatSize(f.bytes_checked()), " checked in ", f.stripes_checked(),
                      " stripes; ", f.blocks_corrupt(), " corrupt, ", f.blocks_unreadable(),
                      " unreadable, ", f.parity_mismatches(), " parity mismatches; ",
                      f.blocks_repaired(), " blocks repaired, ", f.lost_stripes(), " stripes lost");
}

// The options of `ecctl scrub`.
struct ScrubArgs {
  std::string name;  // Empty: every object.
  bool check_only = false;
  std::string rate;
  bool status = false;
};

// The bytes of every block a scrub of `name` (empty: every object) reads; 0 if unknown.
uint64_t ScrubBytes(ClientCore& c, const std::string& name) {
  const auto blocks = [](const v1::ObjectInfo& o) {
    return o.stripe_count() * (o.data_blocks() + o.parity_blocks()) * o.block_size();
  };
  if (!name.empty()) {
    v1::StatRequest request;
    request.set_name(name);
    v1::StatResponse response;
    auto context = c.Context();
    if (!c.objects().Stat(context.get(), request, &response).ok()) return 0;
    return blocks(response.object());
  }
  uint64_t total = 0;
  v1::ListRequest request;
  request.set_page_size(10000);
  absl::Status listed = ForEachListPage(c, request, "scrub", [&](v1::ListResponse& page) {
    for (const v1::ObjectInfo& o : page.objects()) total += blocks(o);
    return absl::OkStatus();
  });
  return listed.ok() ? total : 0;
}

// Exit code 4 (and the one line) when a scrub left damage behind or, checking only, found some.
absl::Status DamageStatus(const v1::ScrubProgress& last, bool check_only) {
  const v1::ScrubFindings& f = last.found();
  if (last.objects_failed() > 0) {
    return Error(kExitDamage, absl::StrCat("scrub: ", last.objects_failed(),
                                           " objects are still damaged (first: ", last.errors(0),
                                           "); see docs/errors.md (DATA_LOSS)"));
  }
  if (check_only && f.blocks_corrupt() + f.blocks_unreadable() + f.parity_mismatches() > 0) {
    return Error(kExitDamage,
                 "scrub --check-only found damage and repaired nothing; run `ecctl scrub` "
                 "to repair it");
  }
  return absl::OkStatus();
}

absl::Status Scrub(ClientCore& c, const ScrubArgs& a) {
  v1::ScrubRequest request;
  request.set_name(a.name);
  request.set_check_only(a.check_only);
  ECCTL_ASSIGN_OR_RETURN(const uint64_t rate, OptionalSize("--rate", a.rate));
  request.set_rate_bytes_per_sec(rate);
  const std::string what = a.name.empty() ? "every object" : a.name;
  ProgressBar progress = c.Progress(absl::StrCat("scrub ", what), ProgressUnit::Bytes());
  const uint64_t total = progress.enabled() ? ScrubBytes(c, a.name) : 0;
  auto context = c.Context();
  auto reader = c.objects().Scrub(context.get(), request);
  v1::ScrubProgress p, last;
  while (reader->Read(&p)) {
    last = p;
    progress.Update(p.found().bytes_checked(), total);
  }
  ECCTL_RETURN_IF_ERROR(c.Check(reader->Finish(), absl::StrCat("scrub ", what)));
  progress.Clear();
  if (c.globals().json) {
    PrintJson(last);
  } else {
    std::printf("scrubbed %llu objects: %s\n", static_cast<unsigned long long>(last.objects_done()),
                Findings(last.found()).c_str());
  }
  return DamageStatus(last, a.check_only);
}

absl::Status ScrubStatus(ClientCore& c) {
  v1::ScrubStatusResponse r;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(
      c.objects().GetScrubStatus(context.get(), v1::ScrubStatusRequest(), &r), "scrub status"));
  if (c.globals().json) {
    PrintJson(r);
    return absl::OkStatus();
  }
  auto when = [](int64_t ms) { return ms == 0 ? std::string("never") : UtcTime(ms); };
  if (!r.background()) {
    std::printf("background scrub: off (--scrub-interval-hours 0)\n");
  } else {
    std::printf(
        "background scrub: every %s at %s/s, %s\n",
        absl::FormatDuration(absl::Seconds(r.interval_seconds())).c_str(),
        r.rate_bytes_per_sec() == 0 ? "full speed" : FormatSize(r.rate_bytes_per_sec()).c_str(),
        r.running() ? "running now" : "idle");
    std::printf("last pass finished: %s; next pass: %s\n", when(r.last_finished_unix_ms()).c_str(),
                r.running() ? "now" : when(r.next_start_unix_ms()).c_str());
    if (r.running()) {
      std::printf("current pass: %llu/%llu objects, %s\n",
                  static_cast<unsigned long long>(r.current().objects_done()),
                  static_cast<unsigned long long>(r.current().objects_total()),
                  Findings(r.current().found()).c_str());
    }
    if (r.passes() > 0) {
      std::printf("last pass: %llu objects, %s\n",
                  static_cast<unsigned long long>(r.last().objects_done()),
                  Findings(r.last().found()).c_str());
    }
  }
  std::printf("since ecd started: %llu objects scrubbed (%llu left damaged), %s\n",
              static_cast<unsigned long long>(r.objects_scrubbed_total()),
              static_cast<unsigned long long>(r.objects_failed_total()),
              Findings(r.found_total()).c_str());
  return absl::OkStatus();
}

// ---- update

// The bytes of a hex string ("" is none); exit code 2 for anything but pairs of hex digits.
absl::StatusOr<std::string> DecodeHex(const std::string& hex) {
  if (hex.size() % 2 != 0) {
    return Error(kExitUsage, "--data-hex needs an even number of hex digits (two per byte)");
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int byte = 0;
    for (char ch : {hex[i], hex[i + 1]}) {
      const int v = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
      if (v < 0) {
        return Error(kExitUsage, absl::StrCat("--data-hex: \"", std::string(1, ch),
                                              "\" is not a hex digit (use 0-9, a-f)"));
      }
      byte = byte * 16 + v;
    }
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

// The options of `ecctl update`.
struct UpdateArgs {
  std::string name;
  std::string offset;
  std::string file;
  std::string data_hex;
  bool hex_given = false;
  bool append = false;
};

// Overwrites [offset, offset + n) of an object with a file's bytes (or --data-hex), as one
// new version; prints the new version and size.
absl::Status Update(ClientCore& c, const UpdateArgs& a) {
  if (a.file.empty() == !a.hex_given) {
    return Error(kExitUsage,
                 "update needs exactly one of --file F (\"-\" for stdin) or --data-hex HEX");
  }
  absl::StatusOr<uint64_t> offset = ecd::ParseSize(a.offset);
  if (!offset.ok()) {
    return Error(kExitUsage, absl::StrCat("--offset: ", offset.status().message()));
  }
  std::string inline_bytes;
  if (a.hex_given) {
    ECCTL_ASSIGN_OR_RETURN(inline_bytes, DecodeHex(a.data_hex));
  }
  int fd = -1;
  if (!a.hex_given) {
    ECCTL_ASSIGN_OR_RETURN(fd, OpenInput(a.file));
  }
  v1::UpdateRequest request;
  v1::UpdateHeader* h = request.mutable_header();
  h->set_name(a.name);
  h->set_offset(*offset);
  h->set_append(a.append);
  if (a.hex_given) {
    h->set_size(inline_bytes.size());
  } else if (const std::optional<uint64_t> size = FileSize(fd)) {
    h->set_size(*size);
  }

  auto context = c.Context();
  v1::UpdateResponse response;
  auto writer = c.RawWriter("/ecd.v1.Objects/Update", context.get(), &response);
  ProgressBar progress =
      c.Progress(absl::StrCat("update ", Printable(a.name)), ProgressUnit::Bytes());
  if (a.hex_given) {
    request.set_data(inline_bytes);
    grpc::Slice message(request.SerializeAsString());
    writer->Write(grpc::ByteBuffer(&message, 1));  // If the server ended early, Finish says why.
  } else {
    // On a read error the stream is cancelled: the daemon drops the new extents and the old
    // version stays.
    ECCTL_RETURN_IF_ERROR(StreamFile(fd, a.file, request, *writer, *context, progress));
    CloseInput(fd);
  }
  writer->WritesDone();
  ECCTL_RETURN_IF_ERROR(c.Check(writer->Finish(), absl::StrCat("update ", Printable(a.name))));
  progress.Clear();
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  const v1::ObjectInfo& o = response.object();
  std::printf(
      "updated %s: %llu bytes at offset %llu; now version %llu, %s (%llu bytes)\n",
      Printable(o.name()).c_str(), static_cast<unsigned long long>(response.bytes_written()),
      static_cast<unsigned long long>(*offset), static_cast<unsigned long long>(o.version()),
      FormatSize(o.size()).c_str(), static_cast<unsigned long long>(o.size()));
  return absl::OkStatus();
}

// ---- stat, ls, rm

absl::Status Stat(ClientCore& c, const std::string& name, bool blocks, bool verify) {
  v1::StatRequest request;
  request.set_name(name);
  request.set_blocks(blocks);
  request.set_verify(verify);
  v1::StatResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.objects().Stat(context.get(), request, &response),
                                absl::StrCat("stat ", Printable(name))));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  const v1::ObjectInfo& o = response.object();
  const uint64_t width = o.data_blocks() + o.parity_blocks();
  std::printf("name:             %s\n", Printable(o.name()).c_str());
  std::printf("size:             %s (%llu bytes)\n", FormatSize(o.size()).c_str(),
              static_cast<unsigned long long>(o.size()));
  std::printf("version:          %llu\n", static_cast<unsigned long long>(o.version()));
  std::printf("shape:            %s (%s)\n", Shape(o).c_str(), MatrixName(o.matrix()));
  std::printf("block size:       %s\n", FormatSize(o.block_size()).c_str());
  std::printf("stripes:          %llu\n", static_cast<unsigned long long>(o.stripe_count()));
  std::printf("degraded stripes: %llu\n", static_cast<unsigned long long>(o.degraded_stripes()));
  std::printf("lost stripes:     %llu\n", static_cast<unsigned long long>(o.lost_stripes()));
  std::printf("redundancy:       %s\n", o.lost_stripes() > 0 ? "DATA LOST in some stripes"
                                        : o.degraded_stripes() > 0
                                            ? "degraded (being repaired: ecctl repair status)"
                                            : "full");
  std::printf("created:          %s\n", UtcTime(o.created_unix_ms()).c_str());
  if (!blocks) return absl::OkStatus();
  std::printf("\n%-8s %-7s %-5s %-6s %-12s %-10s %s\n", "STRIPE", "HEALTHY", "BLOCK", "DEVICE",
              "LBA", "CRC32C", "STATE");
  for (const v1::StripeInfo& s : o.stripes()) {
    for (const v1::BlockInfo& b : s.blocks()) {
      std::printf("%-8llu %u/%-5llu %-5u %-6u %-12llu %08x   %s\n",
                  static_cast<unsigned long long>(s.index()), s.healthy_blocks(),
                  static_cast<unsigned long long>(width), b.index(), b.device(),
                  static_cast<unsigned long long>(b.lba()), b.crc32c(), b.healthy() ? "ok" : "BAD");
    }
  }
  return absl::OkStatus();
}

absl::Status Remove(ClientCore& c, const std::string& name) {
  v1::DeleteRequest request;
  request.set_name(name);
  v1::DeleteResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.objects().Delete(context.get(), request, &response),
                                absl::StrCat("rm ", Printable(name))));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("removed %s (freed %s)\n", name.c_str(), FormatSize(response.freed_bytes()).c_str());
  return absl::OkStatus();
}

// ---- command line

void AddEncode(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<EncodeArgs>();
  auto* sub = app.add_subcommand("encode", "Store a file as a new erasure-coded object");
  sub->add_option("FILE", a->file, "File to store, or - for stdin")->required();
  sub->add_option("--name", a->name, "Object name (default: the file's name)");
  sub->add_option("--data,-m", a->m, "Data blocks per stripe M (1..128; default 4)");
  sub->add_option("--parity,-k", a->k, "Parity blocks per stripe K (1..32; default 2)");
  sub->add_option("--matrix", a->matrix, "cauchy or vandermonde")->capture_default_str();
  sub->add_option("--block-size", a->block_size, "Block size, a multiple of 64 (e.g. 64K, 1M)");
  OnRun(sub, selected, [a](ClientCore& c) { return Encode(c, *a); });
}

void AddRead(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<ReadArgs>();
  auto* sub = app.add_subcommand("read", "Read an object (rebuilding lost blocks) into a file");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_option("-o,--output", a->out, "Output file, or - for stdout")->required();
  sub->add_option("--offset", a->offset, "First byte to read");
  sub->add_option("--length", a->length, "Bytes to read (default: to the end)");
  OnRun(sub, selected, [a](ClientCore& c) { return Read(c, *a); });
}

void AddUpdate(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<UpdateArgs>();
  auto* sub = app.add_subcommand("update", "Overwrite a byte range of an object (a new version)");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_option("--offset", a->offset, "First byte to overwrite (e.g. 4096, 1M)")->required();
  sub->add_option("--file", a->file, "File with the new bytes, or - for stdin");
  auto* hex = sub->add_option("--data-hex", a->data_hex, "The new bytes as hex digits");
  sub->add_flag("--append", a->append, "Let the bytes run past the end and grow the object");
  OnRun(sub, selected, [a, hex](ClientCore& c) {
    a->hex_given = hex->count() > 0;
    return Update(c, *a);
  });
}

void AddRecover(CLI::App& app, Selected& selected) {
  auto name = std::make_shared<std::string>();
  auto missing_only = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("recover", "Check every block and rebuild the bad ones");
  sub->add_option("NAME", *name, "Object name")->required();
  sub->add_flag("--missing-only", *missing_only,
                "Rebuild only blocks known lost (on devices not online, or flagged corrupt), "
                "reading M good blocks of each such stripe, data first; skip the other stripes");
  OnRun(sub, selected,
        [name, missing_only](ClientCore& c) { return Recover(c, *name, *missing_only); });
}

void AddScrub(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<ScrubArgs>();
  auto* sub = app.add_subcommand(
      "scrub",
      "Read every block of an object (or of all), check checksums and parity, repair; exit 4 "
      "if damage is left");
  sub->add_option("NAME", a->name, "Object name (default: every object)");
  sub->add_flag("--check-only", a->check_only, "Report what is wrong, repair nothing");
  sub->add_option("--rate", a->rate, "Bytes read per second (e.g. 100M; default: no limit)");
  sub->add_flag("--status", a->status, "Show the background scrubber and what scrubs found")
      ->excludes("NAME")
      ->excludes("--check-only")
      ->excludes("--rate");
  OnRun(sub, selected, [a](ClientCore& c) { return a->status ? ScrubStatus(c) : Scrub(c, *a); });
}

void AddStat(CLI::App& app, Selected& selected) {
  struct StatArgs {
    std::string name;
    bool blocks = false;
    bool verify = false;
  };
  auto a = std::make_shared<StatArgs>();
  auto* sub = app.add_subcommand("stat", "Show an object and its health per stripe");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_flag("--blocks", a->blocks, "List every block of every stripe");
  sub->add_flag("--verify", a->verify, "Read every block and check its CRC32C");
  OnRun(sub, selected, [a](ClientCore& c) { return Stat(c, a->name, a->blocks, a->verify); });
}

void AddRemove(CLI::App& app, Selected& selected) {
  auto name = std::make_shared<std::string>();
  auto* rm = app.add_subcommand("rm", "Delete an object");
  rm->add_option("NAME", *name, "Object name")->required();
  OnRun(rm, selected, [name](ClientCore& c) { return Remove(c, *name); });
}

void AddBlock(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<BlockGetArgs>();
  auto* block = app.add_subcommand("block", "Stored blocks");
  block->require_subcommand(1);
  auto* get = block->add_subcommand("get", "Export one stored block (data or parity)");
  get->add_option("NAME", a->name, "Object name")->required();
  get->add_option("--stripe", a->stripe, "Stripe number")->required();
  get->add_option("--index", a->index, "Block index: 0..M-1 data, M.. parity")->required();
  get->add_option("-o,--output", a->out, "Output file, or - for stdout")->required();
  OnRun(get, selected, [a](ClientCore& c) { return BlockGet(c, *a); });
}

}  // namespace

void AddObjectCommands(CLI::App& app, Selected& selected) {
  AddEncode(app, selected);
  AddRead(app, selected);
  AddUpdate(app, selected);
  AddRecover(app, selected);
  AddScrub(app, selected);
  AddStat(app, selected);
  AddRemove(app, selected);
  AddBlock(app, selected);
}

}  // namespace ecd::client
