// DataMessage against protobuf's own parser: the same bytes, cut into gRPC slices anywhere, must
// give the same header and data, and the same verdict on malformed input. One difference: a
// header name that is not UTF-8 is kept as it came (for the name rules to refuse), where
// protobuf refuses the message and logs an ERROR line.
#include "wire/data_message.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ecd/v1/ecd.pb.h"

namespace ecd::wire {
namespace {

// The bytes as a ByteBuffer of slices cut at `cuts` (sorted offsets; repeats give empty slices).
grpc::ByteBuffer Sliced(const std::string& bytes, const std::vector<size_t>& cuts) {
  std::vector<grpc::Slice> slices;
  size_t from = 0;
  for (size_t cut : cuts) {
    slices.emplace_back(bytes.data() + from, cut - from);
    from = cut;
  }
  slices.emplace_back(bytes.data() + from, bytes.size() - from);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::vector<size_t> RandomCuts(size_t size, std::mt19937_64& rng) {
  std::vector<size_t> cuts(rng() % 6);
  for (size_t& c : cuts) c = size == 0 ? 0 : rng() % (size + 1);
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

// The whole data field, read back in pieces of `chunk` bytes.
std::string DataOf(const DataMessage& m, size_t chunk) {
  std::string out(m.data_size(), '\0');
  for (size_t at = 0; at < out.size();) {
    const size_t n = m.CopyData(at, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()) + at,
                                                   std::min(chunk, out.size() - at)));
    EXPECT_GT(n, 0u);
    if (n == 0) break;
    at += n;
  }
  return out;
}

// Protobuf's encoding helpers for hand-built messages.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    out.push_back(static_cast<char>((v & 0x7F) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string Tag(uint32_t field, uint32_t type) { return Varint((uint64_t{field} << 3) | type); }
std::string Bytes(uint32_t field, const std::string& value) {
  return Tag(field, 2) + Varint(value.size()) + value;
}

// Parses `bytes` with protobuf into *expected and, cut into random slices, with `parse` (a
// DataMessage parse of the buffer); checks that both agree on whether the bytes are valid and
// that the buffer was taken. Returns `parse`'s status.
template <typename Message, typename Parse>
absl::Status ParseAlongsideProtobuf(const std::string& bytes, std::mt19937_64& rng,
                                    Message* expected, Parse parse) {
  const bool protobuf_ok = expected->ParseFromString(bytes);
  grpc::ByteBuffer buffer = Sliced(bytes, RandomCuts(bytes.size(), rng));
  absl::Status s = parse(&buffer);
  EXPECT_EQ(s.ok(), protobuf_ok) << s;
  EXPECT_EQ(buffer.Length(), 0u);  // Taken.
  if (!s.ok()) {
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  }
  return s;
}

// Parses `bytes` both ways and checks they agree; returns DataMessage's status.
absl::Status ParseBothWays(const std::string& bytes, std::mt19937_64& rng) {
  v1::EncodeRequest expected;
  DataMessage message;
  v1::EncodeHeader header;
  absl::Status s = ParseAlongsideProtobuf(
      bytes, rng, &expected, [&](grpc::ByteBuffer* b) { return message.Parse(b, &header); });
  if (!s.ok()) {
    EXPECT_FALSE(message.has_header());
    EXPECT_EQ(message.data_size(), 0u);
    return s;
  }
  EXPECT_EQ(message.wire_size(), bytes.size());
  EXPECT_EQ(message.has_header(), expected.has_header());
  EXPECT_EQ(header.SerializeAsString(), expected.header().SerializeAsString());
  EXPECT_EQ(message.data_size(), expected.data().size());
  EXPECT_EQ(DataOf(message, 1 + rng() % 70000), expected.data());
  return s;
}

// Parses `bytes` as a ReadResponse both ways (ParseAround its data field, and protobuf) and
// checks they agree; returns DataMessage's status.
absl::Status ParseResponseBothWays(const std::string& bytes, std::mt19937_64& rng) {
  v1::ReadResponse expected;
  DataMessage message;
  v1::ReadResponse fields;
  fields.set_object_size(99);  // Cleared by the parse.
  absl::Status s = ParseAlongsideProtobuf(bytes, rng, &expected, [&](grpc::ByteBuffer* b) {
    return message.ParseAround(b, 1, &fields);
  });
  EXPECT_FALSE(message.has_header());
  if (!s.ok()) {
    EXPECT_EQ(message.data_size(), 0u);
    EXPECT_TRUE(message.data().empty());
    EXPECT_EQ(fields.SerializeAsString(), "");
    return s;
  }
  EXPECT_EQ(message.wire_size(), bytes.size());
  EXPECT_TRUE(fields.data().empty());
  v1::ReadResponse others = expected;
  others.clear_data();
  EXPECT_EQ(fields.SerializeAsString(), others.SerializeAsString());
  EXPECT_EQ(message.data_size(), expected.data().size());
  std::string pieces;
  for (absl::Span<const uint8_t> p : message.data()) {
    pieces.append(reinterpret_cast<const char*>(p.data()), p.size());
  }
  EXPECT_EQ(pieces, expected.data());
  EXPECT_EQ(DataOf(message, 1 + rng() % 70000), expected.data());
  return s;
}

TEST(DataMessageTest, ResponsesMatchProtobufCutAnywhere) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 300; ++round) {
    v1::ReadResponse response;
    if (rng() % 2 == 0) response.set_object_size(rng());
    if (rng() % 2 == 0) response.set_reconstructed_blocks(static_cast<uint32_t>(rng() % 40));
    if (rng() % 2 == 0) response.set_object_version(rng() % 1000);
    const size_t sizes[] = {0, 1, 127, 128, 16383, 16384, 65536 + 17, 1 << 20};
    std::string data(sizes[rng() % 8], '\0');
    for (char& c : data) c = static_cast<char>(rng());
    response.set_data(data);
    std::string bytes = response.SerializeAsString();
    // As ecd sends it: the other fields first, then the data.
    if (rng() % 2 == 0 && !data.empty()) {
      v1::ReadResponse others = response;
      others.clear_data();
      bytes = others.SerializeAsString() + Bytes(1, data);
    }
    ASSERT_TRUE(ParseResponseBothWays(bytes, rng).ok());
  }
}

TEST(DataMessageTest, ResponsesSkipUnknownFieldsAndKeepProtobufsRepeatRules) {
  std::mt19937_64 rng(19);
  const std::string bytes = Tag(2, 0) + Varint(1000) + Bytes(1, "old data") + Tag(9, 0) +
                            Varint(300) + Tag(3, 0) + Varint(2) + Bytes(12, "unknown") + Tag(2, 0) +
                            Varint(2000) +  // object_size again: the last wins.
                            Bytes(1, "new data") + Tag(4, 0) + Varint(7) + Tag(13, 3) + Tag(1, 0) +
                            Varint(1) + Tag(13, 4);  // An unknown group.
  for (int round = 0; round < 50; ++round) {
    ASSERT_TRUE(ParseResponseBothWays(bytes, rng).ok());
  }
  grpc::ByteBuffer buffer = Sliced(bytes, {2, 2, 11, 30});
  DataMessage message;
  v1::ReadResponse fields;
  ASSERT_TRUE(message.ParseAround(&buffer, 1, &fields).ok());
  EXPECT_EQ(fields.object_size(), 2000u);
  EXPECT_EQ(fields.reconstructed_blocks(), 2u);
  EXPECT_EQ(fields.object_version(), 7u);
  EXPECT_EQ(DataOf(message, 3), "new data");
}

TEST(DataMessageTest, ADataFieldOfAnotherWireTypeIsAnUnknownFieldAsInProtobuf) {
  std::mt19937_64 rng(29);
  for (const std::string& bytes :
       {Bytes(1, "kept") + Tag(1, 0) + Varint(5), Tag(1, 0) + Varint(5) + Bytes(1, "kept"),
        Tag(1, 5) + "abcd" + Tag(2, 0) + Varint(3)}) {
    for (int round = 0; round < 20; ++round) {
      ASSERT_TRUE(ParseResponseBothWays(bytes, rng).ok());
    }
  }
}

TEST(DataMessageTest, AReusedMessageKeepsNothingOfTheMessageBefore) {
  v1::ReadResponse first;
  first.set_data("first data");
  first.set_object_size(10);
  first.set_reconstructed_blocks(2);
  v1::ReadResponse second;
  second.set_object_version(3);
  DataMessage message;
  v1::ReadResponse fields;
  grpc::ByteBuffer a = Sliced(first.SerializeAsString(), {5});
  ASSERT_TRUE(message.ParseAround(&a, 1, &fields).ok());
  EXPECT_EQ(DataOf(message, 4), "first data");
  grpc::ByteBuffer b = Sliced(second.SerializeAsString(), {});
  ASSERT_TRUE(message.ParseAround(&b, 1, &fields).ok());
  EXPECT_EQ(message.data_size(), 0u);
  EXPECT_TRUE(message.data().empty());
  EXPECT_EQ(fields.object_size(), 0u);
  EXPECT_EQ(fields.reconstructed_blocks(), 0u);
  EXPECT_EQ(fields.object_version(), 3u);
  EXPECT_EQ(message.wire_size(), second.SerializeAsString().size());
  // A request parsed into the same object afterwards, as the daemon parses them.
  v1::EncodeRequest request;
  request.mutable_header()->set_name("n");
  request.set_data("req");
  grpc::ByteBuffer c = Sliced(request.SerializeAsString(), {1});
  v1::EncodeHeader header;
  ASSERT_TRUE(message.Parse(&c, &header).ok());
  EXPECT_TRUE(message.has_header());
  EXPECT_EQ(header.name(), "n");
  EXPECT_EQ(DataOf(message, 2), "req");
}

TEST(DataMessageTest, MalformedResponsesAreRefusedAsProtobufRefusesThem) {
  std::mt19937_64 rng(23);
  const std::string cases[] = {
      Tag(1, 2),                                     // Length missing.
      Tag(1, 2) + Varint(10) + "short",              // Length past the end.
      Tag(2, 0),                                     // A varint field with no value.
      Tag(2, 0) + std::string(10, '\xff') + "\x01",  // Varint of 11 bytes.
      Tag(9, 3) + Tag(8, 4),                         // A group that ends as another.
      Tag(9, 4),                                     // An end of group outside one.
      Tag(9, 7),                                     // Wire type 7.
      Tag(0, 0) + Varint(1),                         // Field number 0.
      Bytes(1, "fine") + Tag(9, 1) + "1234",         // Fixed64 cut, after good data.
  };
  for (const std::string& bytes : cases) {
    const absl::Status s = ParseResponseBothWays(bytes, rng);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  }
}

TEST(DataMessageTest, MatchesProtobufForRandomRequestsCutAnywhere) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    v1::EncodeRequest request;
    if (rng() % 2 == 0) {
      v1::EncodeHeader* h = request.mutable_header();
      h->set_name("object-" + std::to_string(round));
      h->set_data_blocks(1 + rng() % 16);
      h->set_parity_blocks(1 + rng() % 4);
      h->set_block_size(65536);
      if (rng() % 2 == 0) h->set_size(rng());
    }
    const size_t sizes[] = {0, 1, 127, 128, 16383, 16384, 65536 + 17, 1 << 20};
    std::string data(sizes[rng() % 8], '\0');
    for (char& c : data) c = static_cast<char>(rng());
    request.set_data(data);
    ASSERT_TRUE(ParseBothWays(request.SerializeAsString(), rng).ok());
  }
}

TEST(DataMessageTest, SkipsUnknownFieldsAndKeepsProtobufsRepeatRules) {
  std::mt19937_64 rng(11);
  v1::EncodeHeader a, b;
  a.set_name("first");
  a.set_data_blocks(4);
  b.set_parity_blocks(2);  // Merges into a: name "first", 4+2.
  const std::string bytes = Tag(9, 0) + Varint(300) + Bytes(2, "old data") +
                            Bytes(1, a.SerializeAsString()) + Tag(10, 1) + std::string(8, 'x') +
                            Tag(11, 5) + std::string(4, 'y') + Bytes(12, "unknown") +
                            Bytes(1, b.SerializeAsString()) + Bytes(2, "new data") + Tag(2, 0) +
                            Varint(5) +  // Field 2 as a varint: unknown, skipped.
                            Tag(13, 3) + Tag(1, 0) + Varint(1) + Tag(14, 3) + Tag(14, 4) +
                            Tag(13, 4);  // An unknown group, nested.
  for (int round = 0; round < 50; ++round) {
    ASSERT_TRUE(ParseBothWays(bytes, rng).ok());
  }
  grpc::ByteBuffer buffer = Sliced(bytes, {3, 3, 40});
  DataMessage message;
  v1::EncodeHeader header;
  ASSERT_TRUE(message.Parse(&buffer, &header).ok());
  EXPECT_EQ(header.name(), "first");
  EXPECT_EQ(header.data_blocks(), 4u);
  EXPECT_EQ(header.parity_blocks(), 2u);
  EXPECT_EQ(DataOf(message, 3), "new data");
}

TEST(DataMessageTest, RefusesMalformedMessagesAsProtobufDoes) {
  std::mt19937_64 rng(13);
  v1::EncodeHeader h;
  h.set_name("x");
  const std::string header = h.SerializeAsString();
  const std::string cases[] = {
      Tag(2, 2),                                       // Length missing.
      Tag(2, 2) + Varint(10) + "short",                // Length past the end.
      Tag(1, 2) + Varint(header.size() + 1) + header,  // Header length past the end.
      Tag(1, 2) + Varint(2) + Tag(1, 2) + Varint(9),   // Header whose own field is cut.
      Tag(9, 3) + Tag(8, 4),                           // A group that ends as another.
      Tag(9, 3) + Tag(1, 0) + Varint(1),               // A group that never ends.
      Tag(9, 4),                                       // An end of group outside one.
      Tag(9, 6),                                       // Wire type 6.
      Tag(0, 0) + Varint(1),                           // Field number 0.
      std::string(1, '\x80'),                          // Tag cut inside its varint.
      Tag(9, 0) + std::string(10, '\xff') + "\x01",    // Varint of 11 bytes.
      Tag(9, 1) + "1234567",                           // Fixed64 cut.
      Bytes(2, "fine") + Tag(9, 5) + "12",             // Fixed32 cut, after good data.
  };
  for (const std::string& bytes : cases) {
    const absl::Status s = ParseBothWays(bytes, rng);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  }
}

// Counts libprotobuf's log lines while it lives.
class ProtobufLogCounter {
 public:
  ProtobufLogCounter() {
    lines() = 0;
    previous_ = google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) { ++lines(); });
  }
  ~ProtobufLogCounter() { google::protobuf::SetLogHandler(previous_); }
  static int& lines() {
    static int n = 0;
    return n;
  }

 private:
  google::protobuf::LogHandler* previous_;
};

TEST(DataMessageTest, AHeaderNameThatIsNotUtf8IsKeptAsItCameWithoutALogLine) {
  const std::string bad =
      "a\xff\xc0"
      "b";
  const std::string header = Bytes(1, bad) + Tag(2, 0) + Varint(4) + Tag(3, 0) + Varint(2);
  const std::string bytes = Bytes(1, header) + Bytes(2, "payload");
  ProtobufLogCounter log;
  v1::EncodeRequest strict;
  EXPECT_FALSE(strict.ParseFromString(bytes));  // protobuf refuses it, and logs why
  EXPECT_EQ(ProtobufLogCounter::lines(), 1);

  ProtobufLogCounter quiet;
  for (const std::vector<size_t>& cuts :
       {std::vector<size_t>{}, std::vector<size_t>{1, 3, 5}, std::vector<size_t>{4, 4}}) {
    grpc::ByteBuffer buffer = Sliced(bytes, cuts);
    DataMessage message;
    v1::EncodeHeader h;
    ASSERT_TRUE(message.Parse(&buffer, &h).ok());
    EXPECT_TRUE(message.has_header());
    EXPECT_EQ(h.name(), bad);
    EXPECT_EQ(h.data_blocks(), 4u);
    EXPECT_EQ(h.parity_blocks(), 2u);
    EXPECT_EQ(DataOf(message, 3), "payload");
  }
  // An update's header the same.
  grpc::ByteBuffer update = Sliced(Bytes(1, Tag(2, 0) + Varint(7) + Bytes(1, bad)), {2});
  DataMessage message;
  v1::UpdateHeader u;
  ASSERT_TRUE(message.Parse(&update, &u).ok());
  EXPECT_EQ(u.name(), bad);
  EXPECT_EQ(u.offset(), 7u);
  EXPECT_EQ(ProtobufLogCounter::lines(), 0);
}

TEST(DataMessageTest, ANameThatIsNotUtf8KeepsProtobufsRepeatRules) {
  ProtobufLogCounter quiet;
  const std::string bad = "\xfe";
  const std::pair<std::string, std::string> cases[] = {
      {Bytes(1, "good") + Bytes(1, bad), bad},  // the last one counts
      {Bytes(1, bad) + Bytes(1, "good"), "good"},
      {Bytes(1, bad) + Bytes(1, "\xfd"), "\xfd"},
      {Bytes(1, bad) + Tag(2, 0) + Varint(3) + Bytes(1, "x") + Bytes(9, "unknown"), "x"},
  };
  for (const auto& [header, want] : cases) {
    grpc::ByteBuffer buffer = Sliced(Bytes(1, header), {});
    DataMessage message;
    v1::EncodeHeader h;
    ASSERT_TRUE(message.Parse(&buffer, &h).ok());
    EXPECT_EQ(h.name(), want);
  }
  // Two header fields merge: the second's name wins, UTF-8 or not.
  grpc::ByteBuffer merged = Sliced(Bytes(1, Bytes(1, "a") + Tag(2, 0) + Varint(5)) +
                                       Bytes(1, Bytes(1, bad) + Tag(3, 0) + Varint(1)),
                                   {7});
  DataMessage message;
  v1::EncodeHeader h;
  ASSERT_TRUE(message.Parse(&merged, &h).ok());
  EXPECT_EQ(h.name(), bad);
  EXPECT_EQ(h.data_blocks(), 5u);
  EXPECT_EQ(h.parity_blocks(), 1u);
  // Cut short after a bad name: refused as protobuf refuses it.
  grpc::ByteBuffer cut = Sliced(Bytes(1, Bytes(1, bad) + Tag(1, 2) + Varint(9)), {});
  EXPECT_TRUE(absl::IsInvalidArgument(message.Parse(&cut, &h)));
  EXPECT_EQ(ProtobufLogCounter::lines(), 0);
}

TEST(DataMessageTest, AnEmptyMessageHasNoHeaderAndNoData) {
  DataMessage message;
  v1::EncodeHeader header;
  header.set_name("left over");
  grpc::ByteBuffer empty;
  ASSERT_TRUE(message.Parse(&empty, &header).ok());
  EXPECT_FALSE(message.has_header());
  EXPECT_EQ(header.name(), "");  // Cleared.
  EXPECT_EQ(message.data_size(), 0u);
  EXPECT_EQ(message.wire_size(), 0u);
}

TEST(DataMessageTest, CopyDataStopsAtTheEnd) {
  v1::EncodeRequest request;
  request.set_data("0123456789");
  const std::string bytes = request.SerializeAsString();
  grpc::ByteBuffer buffer = Sliced(bytes, {4, 7});
  DataMessage message;
  v1::EncodeHeader header;
  ASSERT_TRUE(message.Parse(&buffer, &header).ok());
  std::string out(8, '-');
  auto span = absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size());
  EXPECT_EQ(message.CopyData(6, span), 4u);
  EXPECT_EQ(out, "6789----");
  EXPECT_EQ(message.CopyData(10, span), 0u);
  EXPECT_EQ(message.CopyData(1, span.subspan(0, 3)), 3u);
  EXPECT_EQ(out.substr(0, 3), "123");
}

}  // namespace
}  // namespace ecd::wire
