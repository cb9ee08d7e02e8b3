// Fuzzes the CXL event record codec (lib/cxl/event_record.h): DecodeRecord, EncodeRecord,
// RecordWarnings and RecordToJson, and the UUID text form it prints.
//
// Input: the record image (bytes 0..127); any bytes after it are the log name given to
// RecordToJson. An input shorter than a record is also tried as UUID text.
//
// Properties checked beyond "no crash":
// - DecodeRecord accepts exactly the images of >= 128 bytes whose length byte (0x10) is 0x80,
//   and refuses the others with InvalidArgument;
// - byte-exact round trip: EncodeRecord(DecodeRecord(b)) == b[0, 128), and
//   DecodeRecord(EncodeRecord(r)) == r;
// - the accessors agree with the image: KindOf == KindFromUuid(bytes 0..15), UuidOf, the header
//   fields at their offsets;
// - RecordWarnings lists exactly one note per reserved value (reserved header flag bits, each
//   reserved enum code, an unknown UUID) and nothing for a clean record;
// - RecordToJson is one syntactically valid JSON object with unique keys, whatever the log name
//   (quotes, backslashes, control bytes): "system" is "cxl", "event" names the record type,
//   "log" unescapes back to the log name given when that is valid UTF-8, hdr_uuid parses back to
//   the record's UUID, and hdr_flags, hdr_handle, hdr_timestamp and dpa / device_temp carry the
//   decoded values;
// - Uuid::Parse accepts only the canonical 8-4-4-4-12 hex form, and ToString(Parse(t)) is t in
//   lower case.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lib/cxl/event_record.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::cxl {
namespace {

// A strict JSON reader (RFC 8259 grammar; string bytes >= 0x80 pass unchecked: RecordToJson
// passes valid UTF-8 through) that keeps the top-level object's members as raw value text, strings
// unescaped.
class Json {
 public:
  explicit Json(std::string_view s) : s_(s) {}

  // Parses one top-level object and nothing after it. False on any syntax error or a repeated
  // top-level key.
  bool ParseObject(std::map<std::string, std::string>* members) {
    Ws();
    if (!Eat('{')) return false;
    Ws();
    if (Eat('}')) return AtEnd();
    while (true) {
      Ws();
      std::string key;
      if (!String(&key)) return false;
      Ws();
      if (!Eat(':')) return false;
      Ws();
      std::string value;
      if (Peek() == '"') {
        if (!String(&value)) return false;
      } else {
        const size_t start = i_;
        if (!Value(0)) return false;
        value = std::string(s_.substr(start, i_ - start));
      }
      if (!members->emplace(std::move(key), std::move(value)).second) return false;
      Ws();
      if (Eat('}')) return AtEnd();
      if (!Eat(',')) return false;
    }
  }

 private:
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c || i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool AtEnd() {
    Ws();
    return i_ == s_.size();
  }
  void Ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Value(int depth) {
    if (depth > 16) return false;
    Ws();
    const char c = Peek();
    if (c == '"') {
      std::string ignored;
      return String(&ignored);
    }
    if (c == '[') {
      ++i_;
      Ws();
      if (Eat(']')) return true;
      while (true) {
        if (!Value(depth + 1)) return false;
        Ws();
        if (Eat(']')) return true;
        if (!Eat(',')) return false;
      }
    }
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return true;
      }
    }
    return false;  // nested objects never occur in RecordToJson
  }
  bool Number() {
    Eat('-');
    if (Eat('0')) {
      if (std::isdigit(static_cast<unsigned char>(Peek()))) return false;  // no leading zeros
    } else {
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return false;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++i_;
    }
    return true;  // RecordToJson prints integers only
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;  // control characters must be escaped
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
            v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                   ? h - '0'
                                                   : std::tolower(h) - 'a' + 10);
          }
          if (v >= 0x80) return false;  // RecordToJson escapes only control bytes
          out->push_back(static_cast<char>(v));
          break;
        }
        default:
          return false;
      }
    }
    return false;  // unterminated
  }

  std::string_view s_;
  size_t i_ = 0;
};

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 1, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 2, cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 3, cp = b & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

uint64_t Le(const uint8_t* p, size_t len) {
  uint64_t v = 0;
  for (size_t i = len; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

template <typename E>
int Reserved(E v) {
  return IsKnown(v) ? 0 : 1;
}

// How many notes RecordWarnings must give.
int ExpectedWarnings(const EventRecord& r) {
  int n = HeaderOf(r).reserved_flags() != 0 ? 1 : 0;
  if (const auto* g = std::get_if<GeneralMediaRecord>(&r)) {
    n += Reserved(g->type) + Reserved(g->transaction_type) + Reserved(g->sub_type);
  } else if (const auto* d = std::get_if<DramRecord>(&r)) {
    n += Reserved(d->type) + Reserved(d->transaction_type) + Reserved(d->sub_type);
  } else if (const auto* m = std::get_if<MemoryModuleRecord>(&r)) {
    n += Reserved(m->event_type) + Reserved(m->health.media_status) + Reserved(m->event_sub_type);
  } else if (KindOf(r) == RecordKind::kUnknown) {
    n += 1;
  }
  return n;
}

std::string_view EventName(const EventRecord& r) {
  switch (r.index()) {
    case 0:
      return "cxl_general_media";
    case 1:
      return "cxl_dram";
    case 2:
      return "cxl_memory_module";
    default:
      return "cxl_generic_event";
  }
}

void CheckUuidText(std::string_view text) {
  absl::StatusOr<Uuid> u = Uuid::Parse(text);
  bool canonical = text.size() == 36;
  for (size_t i = 0; canonical && i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    canonical = dash ? text[i] == '-' : std::isxdigit(static_cast<unsigned char>(text[i])) != 0;
  }
  FUZZ_CHECK(u.ok() == canonical);
  if (!u.ok()) {
    FUZZ_CHECK(u.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  FUZZ_CHECK(u->ToString() == lower);
}

void CheckJson(const EventRecord& r, std::string_view log_name) {
  const std::string json = RecordToJson(r, log_name);
  std::map<std::string, std::string> m;
  FUZZ_CHECK(Json(json).ParseObject(&m));
  const EventHeader& h = HeaderOf(r);
  FUZZ_CHECK(m["system"] == "cxl");
  FUZZ_CHECK(m["event"] == EventName(r));
  // Bytes that are not valid UTF-8 come out as U+FFFD, so only a valid name round-trips.
  if (ValidUtf8(log_name)) FUZZ_CHECK(m["log"] == log_name);
  absl::StatusOr<Uuid> uuid = Uuid::Parse(m["hdr_uuid"]);
  FUZZ_CHECK(uuid.ok() && *uuid == UuidOf(r));
  FUZZ_CHECK(m["hdr_flags"] == std::to_string(h.flags & kFlagsMask));
  FUZZ_CHECK(m["hdr_handle"] == std::to_string(h.handle));
  FUZZ_CHECK(m["hdr_timestamp"] == std::to_string(h.timestamp));
  if (const auto* g = std::get_if<GeneralMediaRecord>(&r)) {
    FUZZ_CHECK(m["dpa"] == std::to_string(g->dpa()));
  } else if (const auto* d = std::get_if<DramRecord>(&r)) {
    FUZZ_CHECK(m["dpa"] == std::to_string(d->dpa()));
  } else if (const auto* mm = std::get_if<MemoryModuleRecord>(&r)) {
    FUZZ_CHECK(m["device_temp"] == std::to_string(mm->health.device_temp));
  }
}

}  // namespace
}  // namespace ecd::cxl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::cxl;
  absl::StatusOr<EventRecord> rec = DecodeRecord(absl::MakeConstSpan(data, size));
  const bool acceptable = size >= kRecordSize && data[kHeaderLengthOffset] == kRecordLength;
  FUZZ_CHECK(rec.ok() == acceptable);
  if (!rec.ok()) {
    FUZZ_CHECK(rec.status().code() == absl::StatusCode::kInvalidArgument);
    if (size < kRecordSize)
      CheckUuidText(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
  }

  // Byte-exact round trip, both ways.
  const std::array<uint8_t, kRecordSize> image = EncodeRecord(*rec);
  FUZZ_CHECK(std::memcmp(image.data(), data, kRecordSize) == 0);
  absl::StatusOr<EventRecord> again = DecodeRecord(image);
  FUZZ_CHECK(again.ok() && *again == *rec);

  // Accessors against the raw image.
  Uuid uuid;
  std::memcpy(uuid.bytes.data(), data, 16);
  FUZZ_CHECK(KindOf(*rec) == KindFromUuid(uuid));
  FUZZ_CHECK(UuidOf(*rec) == uuid);
  const EventHeader& h = HeaderOf(*rec);
  FUZZ_CHECK(h.flags == Le(data + kHeaderFlagsOffset, kHeaderFlagsSize));
  FUZZ_CHECK(h.handle == Le(data + kHeaderHandleOffset, 2));
  FUZZ_CHECK(h.related_handle == Le(data + kHeaderRelatedHandleOffset, 2));
  FUZZ_CHECK(h.timestamp == Le(data + kHeaderTimestampOffset, 8));
  FUZZ_CHECK(static_cast<uint8_t>(h.severity()) == (data[kHeaderFlagsOffset] & kFlagSeverityMask));
  FUZZ_CHECK(!RecordKindName(KindOf(*rec)).empty());
  FUZZ_CHECK(!SeverityName(h.severity()).empty());

  const std::vector<std::string> warnings = RecordWarnings(*rec);
  FUZZ_CHECK(static_cast<int>(warnings.size()) == ExpectedWarnings(*rec));
  for (const std::string& w : warnings) FUZZ_CHECK(!w.empty());

  CheckJson(*rec, std::string_view(reinterpret_cast<const char*>(data) + kRecordSize,
                                   size - kRecordSize));
  CheckUuidText(uuid.ToString());
  return 0;
}
