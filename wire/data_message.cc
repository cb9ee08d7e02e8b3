// DataMessage: the protobuf wire format of EncodeRequest/UpdateRequest and ReadResponse, read
// over gRPC's slices.
#include "wire/data_message.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpc/support/log.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ecd/v1/ecd.pb.h"

namespace ecd::wire {
namespace {

using Piece = absl::Span<const uint8_t>;

constexpr uint32_t kHeaderField = 1;
constexpr uint32_t kDataField = 2;

// Protobuf wire types (https://protobuf.dev/programming-guides/encoding/).
enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// How deep unknown groups may nest (protobuf's default recursion limit).
constexpr int kMaxGroupDepth = 100;

// Reads a message's bytes in order across the slices that hold them.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { SkipEmpty(); }

  bool AtEnd() const { return slice_ == slices_.size(); }

  // Where the cursor is, for AppendSince.
  struct Mark {
    size_t slice;
    size_t at;
  };
  Mark Here() const { return {slice_, at_}; }
  // Appends the bytes from `mark` to the cursor to `out`.
  void AppendSince(Mark mark, std::string* out) const {
    for (size_t s = mark.slice; s <= slice_ && s < slices_.size(); ++s) {
      const size_t from = s == mark.slice ? mark.at : 0;
      const size_t to = s == slice_ ? at_ : slices_[s].size();
      out->append(reinterpret_cast<const char*>(slices_[s].begin()) + from, to - from);
    }
  }

  // A base-128 varint of at most 10 bytes; false when the bytes end inside it or it is longer.
  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (AtEnd()) return false;
      const uint8_t byte = slices_[slice_].begin()[at_];
      Advance(1);
      *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // Moves past the next `n` bytes, appending them to `pieces` (when given) as spans into the
  // slices; false when fewer than `n` remain.
  bool Take(uint64_t n, std::vector<Piece>* pieces) {
    while (n > 0) {
      if (AtEnd()) return false;
      const grpc::Slice& s = slices_[slice_];
      const size_t count = static_cast<size_t>(std::min<uint64_t>(n, s.size() - at_));
      if (pieces != nullptr) pieces->emplace_back(s.begin() + at_, count);
      Advance(count);
      n -= count;
    }
    return true;
  }

 private:
  void Advance(size_t n) {
    at_ += n;
    if (at_ == slices_[slice_].size()) {
      ++slice_;
      at_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (slice_ < slices_.size() && slices_[slice_].size() == 0) ++slice_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;  // The slice holding the next byte; slices_.size() at the end.
  size_t at_ = 0;     // The next byte's offset in it.
};

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("the message is not a valid protobuf message: ", what));
}

// Reads a field tag: its number (never 0) and wire type.
absl::Status ReadTag(Cursor& cursor, uint64_t* field, uint32_t* type) {
  uint64_t tag = 0;
  if (!cursor.ReadVarint(&tag) || tag > UINT32_MAX) {
    return Malformed("a field tag is truncated or too long");
  }
  *field = tag >> 3;
  *type = static_cast<uint32_t>(tag & 7);
  if (*field == 0) return Malformed("field number 0");
  return absl::OkStatus();
}

// Reads a length-delimited value of `field`, appending its bytes to `pieces` (when given) as
// spans into the slices; *length (when given) is its length.
absl::Status TakeLengthDelimited(Cursor& cursor, uint64_t field, std::vector<Piece>* pieces,
                                 uint64_t* length = nullptr) {
  uint64_t n = 0;
  if (!cursor.ReadVarint(&n) || !cursor.Take(n, pieces)) {
    return Malformed(absl::StrCat("field ", field, " is cut short"));
  }
  if (length != nullptr) *length = n;
  return absl::OkStatus();
}

// Moves past the value of a field that is not kept (an unknown field, as protobuf skips one);
// `depth` is how many groups enclose it.
absl::Status SkipField(Cursor& cursor, uint64_t field, uint32_t type, int depth) {
  uint64_t value = 0;
  switch (type) {
    case kVarint:
      if (!cursor.ReadVarint(&value)) return Malformed("a varint field is truncated");
      return absl::OkStatus();
    case kFixed64:
    case kFixed32:
      if (!cursor.Take(type == kFixed64 ? 8 : 4, nullptr)) {
        return Malformed("a fixed-size field is truncated");
      }
      return absl::OkStatus();
    case kLengthDelimited:
      return TakeLengthDelimited(cursor, field, nullptr);
    case kStartGroup:
      if (depth == kMaxGroupDepth) return Malformed("groups nest too deep");
      while (true) {
        uint64_t inner = 0;
        uint32_t inner_type = 0;
        if (cursor.AtEnd()) return Malformed(absl::StrCat("group ", field, " never ends"));
        if (absl::Status s = ReadTag(cursor, &inner, &inner_type); !s.ok()) return s;
        if (inner_type == kEndGroup) {
          if (inner != field) return Malformed(absl::StrCat("group ", field, " ends as ", inner));
          return absl::OkStatus();
        }
        if (absl::Status s = SkipField(cursor, inner, inner_type, depth + 1); !s.ok()) return s;
      }
    default:
      return Malformed(absl::StrCat("field ", field, " has wire type ", type));
  }
}

// Walks the fields of the message under `cursor`. The value of field `data_field` (length-
// delimited) is taken into *data as spans into the slices, with its length in *data_size; a
// repeated one replaces the one before, as in protobuf. Every other field goes to
// other(cursor, field, type, start), `start` marking its tag, which must move past its value.
template <typename Other>
absl::Status WalkFields(Cursor& cursor, uint32_t data_field, std::vector<Piece>* data,
                        uint64_t* data_size, Other other) {
  while (!cursor.AtEnd()) {
    const Cursor::Mark start = cursor.Here();
    uint64_t field = 0;
    uint32_t type = 0;
    if (absl::Status s = ReadTag(cursor, &field, &type); !s.ok()) return s;
    if (field != data_field || type != kLengthDelimited) {
      if (absl::Status s = other(cursor, field, type, start); !s.ok()) return s;
      continue;
    }
    data->clear();
    *data_size = 0;
    if (absl::Status s = TakeLengthDelimited(cursor, field, data, data_size); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A string field of a header taken out of its bytes, with its value as it came.
struct TakenString {
  const google::protobuf::FieldDescriptor* field;
  std::string value;
};

// Takes the top-level string fields of `type` whose values are not valid UTF-8 out of `bytes`,
// which keeps every other field as it came: protobuf refuses such a message whole (and logs an
// ERROR line for what is the client's mistake), while the service's own rules refuse an object
// name that is not UTF-8 with a message that says so. For a singular field only the last
// occurrence counts, as in protobuf. False, with `bytes` left whole, when they do not walk as
// protobuf fields (protobuf's parser refuses those too, after logging a bad string it met).
bool TakeInvalidUtf8Strings(const google::protobuf::Descriptor* type, std::string* bytes,
                            std::vector<TakenString>* taken_out) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  std::vector<TakenString> taken;
  std::string rest;
  int kept_from = 0;  // bytes before this went to `rest` already, or were taken
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes->data()),
                                            static_cast<int>(bytes->size()));
  auto forget = [&taken](const FieldDescriptor* field) {
    if (field->is_repeated()) return;
    taken.erase(std::remove_if(taken.begin(), taken.end(),
                               [field](const TakenString& t) { return t.field == field; }),
                taken.end());
  };
  while (true) {
    const int start = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    const FieldDescriptor* field = type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    if (field == nullptr || field->type() != FieldDescriptor::TYPE_STRING ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    std::string value;
    if (!WireFormatLite::ReadString(&in, &value)) return false;
    forget(field);
    if (google::protobuf::internal::IsStructurallyValidUTF8(value.data(),
                                                            static_cast<int>(value.size()))) {
      continue;
    }
    rest.append(*bytes, kept_from, start - kept_from);
    kept_from = in.CurrentPosition();
    taken.push_back({field, std::move(value)});
  }
  if (in.CurrentPosition() != static_cast<int>(bytes->size())) return false;  // a bad tag
  if (kept_from != 0) {
    rest.append(*bytes, kept_from, std::string::npos);
    *bytes = std::move(rest);
  }
  *taken_out = std::move(taken);
  return true;
}

}  // namespace

int ObjectsMethodIndex(const std::string& name) {
  const google::protobuf::ServiceDescriptor* service =
      v1::EncodeRequest::descriptor()->file()->FindServiceByName("Objects");
  const google::protobuf::MethodDescriptor* method = service->FindMethodByName(name);
  GPR_ASSERT(method != nullptr);
  return method->index();
}

absl::Status DataMessage::Take(grpc::ByteBuffer* buffer) {
  Reset();
  // Dump takes references to the slices (no copy). A buffer that holds nothing at all is the
  // empty message; one whose bytes cannot be had (a failed decompression) is refused.
  if (buffer->Valid() && !buffer->Dump(&slices_).ok()) {
    buffer->Clear();
    Reset();
    return Malformed("its bytes could not be read from gRPC's buffer (compressed badly?)");
  }
  buffer->Clear();
  for (const grpc::Slice& s : slices_) wire_size_ += s.size();
  return absl::OkStatus();
}

absl::Status DataMessage::ParseAround(grpc::ByteBuffer* buffer, uint32_t data_field,
                                      google::protobuf::MessageLite* others) {
  others->Clear();
  if (absl::Status s = Take(buffer); !s.ok()) return s;
  std::string rest;  // Every field but the data field, as it came.
  Cursor cursor(slices_);
  absl::Status status =
      WalkFields(cursor, data_field, &data_, &data_size_,
                 [&rest](Cursor& c, uint64_t field, uint32_t type, Cursor::Mark start) {
                   absl::Status s = SkipField(c, field, type, 0);
                   c.AppendSince(start, &rest);
                   return s;
                 });
  if (status.ok() && !others->ParseFromString(rest)) {
    status = Malformed("its fields other than the data do not parse");
  }
  if (!status.ok()) {
    Reset();
    others->Clear();
  }
  return status;
}

void DataMessage::Reset() {
  slices_.clear();
  data_.clear();
  wire_size_ = 0;
  data_size_ = 0;
  has_header_ = false;
}

absl::Status DataMessage::Parse(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* header) {
  header->Clear();
  if (absl::Status s = Take(buffer); !s.ok()) return s;

  std::vector<Piece> header_pieces;
  Cursor cursor(slices_);
  absl::Status status = WalkFields(cursor, kDataField, &data_, &data_size_,
                                   [&](Cursor& c, uint64_t field, uint32_t type, Cursor::Mark) {
                                     if (field != kHeaderField || type != kLengthDelimited)
                                       return SkipField(c, field, type, 0);
                                     has_header_ = true;
                                     return TakeLengthDelimited(c, field, &header_pieces);
                                   });
  if (status.ok() && has_header_) {
    std::string bytes;
    for (Piece p : header_pieces) bytes.append(reinterpret_cast<const char*>(p.data()), p.size());
    // Consecutive copies of a message field merge, as ParseFromString of their concatenation.
    // String fields that are not UTF-8 are set as they came, after the parse of the rest.
    auto* full = dynamic_cast<google::protobuf::Message*>(header);
    std::vector<TakenString> taken;
    if ((full != nullptr && !TakeInvalidUtf8Strings(full->GetDescriptor(), &bytes, &taken)) ||
        !header->ParseFromString(bytes)) {
      status = Malformed("its header field does not parse");
    } else {
      for (TakenString& t : taken) {
        if (t.field->is_repeated()) {
          full->GetReflection()->AddString(full, t.field, std::move(t.value));
        } else {
          full->GetReflection()->SetString(full, t.field, std::move(t.value));
        }
      }
    }
  }
  if (!status.ok()) {
    Reset();
    header->Clear();
  }
  return status;
}

absl::StatusOr<DataMessage> ReadFirstMessage(grpc::ServerReader<grpc::ByteBuffer>* reader,
                                             absl::string_view method, absl::string_view fields,
                                             google::protobuf::MessageLite* header) {
  grpc::ByteBuffer raw;
  if (!reader->Read(&raw)) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty ", method, " stream: the first message must carry a header"));
  }
  DataMessage first;
  if (absl::Status s = first.Parse(&raw, header); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the first ", method, "Request was refused: ", s.message(), "; nothing was stored"));
  }
  if (!first.has_header()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the first ", method, "Request must carry a header (", fields, ")"));
  }
  return first;
}

size_t DataMessage::CopyData(uint64_t offset, absl::Span<uint8_t> out) const {
  size_t copied = 0;
  for (Piece p : data_) {
    if (copied == out.size()) break;
    if (offset >= p.size()) {
      offset -= p.size();
      continue;
    }
    const size_t n = std::min<size_t>(p.size() - offset, out.size() - copied);
    std::memcpy(out.data() + copied, p.data() + offset, n);
    copied += n;
    offset = 0;
  }
  return copied;
}

}  // namespace ecd::wire
