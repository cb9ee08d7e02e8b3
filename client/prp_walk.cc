// prp-walk: JSON in, PRP resolution through the real walker and fetch manager, JSON out.
#include "client/prp_walk.h"

#include <google/protobuf/util/json_util.h>

#include <cstring>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "ecd/tools/prp_walk.pb.h"
#include "lib/nvme/command.h"
#include "lib/nvme/controller.h"
#include "lib/nvme/prp_fetch.h"
#include "lib/nvme/prp_walker.h"

namespace ecd::tools {
namespace {

absl::StatusOr<uint64_t> ParseAddr(const std::string& field, const std::string& text) {
  uint64_t v = 0;
  bool ok = false;
  if (text.size() > 2 && (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0)) {
    ok = absl::SimpleHexAtoi(text.substr(2), &v);
  } else {
    ok = absl::SimpleAtoi(text, &v);
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: \"%s\" is not an address (use 0x... or decimal)", field, text));
  }
  return v;
}

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

FetchHeaderReport HeaderReport(const nvme::PrpFetchInfo& h) {
  FetchHeaderReport r;
  r.set_data_size_rem(h.data_size_rem);
  r.set_host_addr(Hex(h.host_addr));
  r.set_sgl_or_prp(h.sgl_or_prp);
  r.set_prp_index(h.prp_index);
  r.set_ping_or_pong(h.ping_or_pong == nvme::kPing ? "ping" : "pong");
  r.set_no_of_desc_rem(h.no_of_desc_rem);
  r.set_error_code(h.error_code);
  r.set_valid_entries(h.valid_entries);
  std::string hex;
  for (uint8_t b : h.Pack()) hex += absl::StrFormat("%02x", b);
  r.set_packed_hex(hex);
  return r;
}

// Host memory that holds PRP lists, by 8-byte slot address.
absl::StatusOr<std::map<uint64_t, uint64_t>> ListSlots(const PrpWalkRequest& req) {
  std::map<uint64_t, uint64_t> slots;
  for (const ListMemory& l : req.lists()) {
    auto base = ParseAddr("lists.addr", l.addr());
    if (!base.ok()) return base.status();
    if (*base % 8 != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("lists.addr %s is not qword aligned", l.addr()));
    }
    for (int i = 0; i < l.entries_size(); ++i) {
      auto v = ParseAddr("lists.entries", l.entries(i));
      if (!v.ok()) return v.status();
      slots[*base + 8 * static_cast<uint64_t>(i)] = *v;
    }
  }
  return slots;
}

}  // namespace

absl::StatusOr<std::string> RunPrpWalk(const std::string& request_json, bool pretty) {
  PrpWalkRequest req;
  google::protobuf::util::JsonParseOptions po;
  if (auto s = google::protobuf::util::JsonStringToMessage(request_json, &req, po); !s.ok()) {
    // The parser's message quotes the input over several lines; keep the error to one line.
    std::string why(s.message());
    why = why.substr(0, why.find('\n'));
    return absl::InvalidArgumentError(
        absl::StrFormat("request is not a PrpWalkRequest JSON document: %s", why));
  }
  const uint32_t page = req.page_size() == 0 ? 4096 : req.page_size();
  const uint32_t lba_size = req.lba_size() == 0 ? 512 : req.lba_size();
  const uint32_t mdts = req.has_mdts() ? req.mdts() : 8;
  uint64_t length = req.length();
  if (length == 0) length = uint64_t{req.nlb()} * lba_size;
  if (length == 0) return absl::InvalidArgumentError("give nlb (blocks) or length (bytes) > 0");
  auto prp1 = ParseAddr("prp1", req.prp1().empty() ? "0" : req.prp1());
  if (!prp1.ok()) return prp1.status();
  auto prp2 = ParseAddr("prp2", req.prp2().empty() ? "0" : req.prp2());
  if (!prp2.ok()) return prp2.status();

  auto listed = ListSlots(req);
  if (!listed.ok()) return listed.status();
  const std::map<uint64_t, uint64_t>& slots = *listed;
  nvme::PrpFetchOptions fo;
  fo.page_size = page;
  fo.prps_per_index = req.prps_per_index() == 0 ? 8 : req.prps_per_index();
  fo.num_indexes = 1;
  auto fetcher = nvme::PrpFetchManager::Create(fo, [&slots](uint64_t addr, void* dst, size_t len) {
    if (addr % 8 != 0 || len % 8 != 0) return false;
    auto* out = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < len; i += 8) {
      auto it = slots.find(addr + i);
      if (it == slots.end()) return false;
      std::memcpy(out + i, &it->second, 8);
    }
    return true;
  });
  if (!fetcher.ok()) return fetcher.status();

  PrpWalkReport report;
  report.set_length(length);
  (*fetcher)->set_event_sink([&](const nvme::PrpFetchEvent& e) {
    FetchEventReport* r = report.add_events();
    r->set_kind(e.kind == nvme::PrpFetchEvent::kBegin  ? "begin"
                : e.kind == nvme::PrpFetchEvent::kFill ? "fill"
                                                       : "error");
    r->set_prp_index(e.prp_index);
    r->set_buffer(e.buffer == nvme::kPing ? "ping" : "pong");
    *r->mutable_header() = HeaderReport(e.header);
    for (uint64_t entry : (*fetcher)->Entries(e.prp_index, e.buffer)) r->add_entries(Hex(entry));
    if (e.kind == nvme::PrpFetchEvent::kFill) {
      nvme::FillDescriptor d{e.prp_index, static_cast<uint8_t>(e.buffer)};
      r->set_fill_descriptor(absl::StrFormat("0x%04x", d.Pack()));
    }
  });
  nvme::NvmeStatus status;
  std::vector<nvme::DataSegment> segments;
  if (mdts != 0 && length > nvme::MdtsBytes(mdts)) {
    status = nvme::Failure(nvme::kScInvalidField);
  } else {
    nvme::PrpWalk walk = nvme::WalkPrps(**fetcher, page, *prp1, *prp2, length);
    status = walk.status;
    segments = std::move(walk.segments);
  }
  NvmeStatusReport* st = report.mutable_status();
  st->set_ok(status.ok());
  st->set_sct(status.sct);
  st->set_sc(status.sc);
  st->set_dnr(status.dnr);
  st->set_name(nvme::StatusName(status.sct, status.sc));
  for (const nvme::DataSegment& s : segments) {
    SegmentReport* r = report.add_segments();
    r->set_addr(Hex(s.addr));
    r->set_len(s.len);
  }
  for (const nvme::DataSegment& s :
       nvme::CoalesceSegments(segments, 0, uint64_t{1} << 62, UINT32_MAX)) {
    SegmentReport* r = report.add_coalesced();
    r->set_addr(Hex(s.addr));
    r->set_len(s.len);
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions jo;
  jo.add_whitespace = pretty;
  jo.preserve_proto_field_names = true;
  jo.always_print_primitive_fields = true;
  if (auto s = google::protobuf::util::MessageToJsonString(report, &out, jo); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return out;
}

}  // namespace ecd::tools
