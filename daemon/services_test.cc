// ObjectsService on the wire. Encode and Update: their requests are parsed by DataMessage, so
// malformed bytes and a missing header must be refused by name before the store is touched (the
// service here runs over a null store: reaching it would crash the test). Later messages are
// checked over a real store in tests/integration/limits_client.py. Read: over a real store, the
// messages ReadStreamSink builds and its sender thread writes carry the object's bytes in order,
// and a client that leaves in the middle of a read leaves the service able to serve the next.
// Devices and Rebuilds, over a real store and repair planner: Replace, SetState's refusals, the
// fields of a down device, SetRepair and the repair's status. A name that is not UTF-8: refused
// by the name rule in an Encode or Update header, INVALID_ARGUMENT (not gRPC's INTERNAL) on the
// other calls, and never an ERROR line from libprotobuf. The stream idle timer cancels a client
// that sends nothing, naming --stream-idle-timeout.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "daemon/devices_service.h"
#include "daemon/objects_service.h"
#include "daemon/rebuilds_service.h"
#include "daemon/request_parse.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "ecd/v1/ecd.pb.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::daemon {
namespace {

class RawRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    builder_.RegisterService(&objects_);
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = std::make_unique<grpc::GenericStub>(server_->InProcessChannel({}));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // Sends `messages` (serialized bytes each) on one client stream of `method`, then half-closes.
  grpc::Status Stream(const std::string& method, const std::vector<std::string>& messages) {
    grpc::ClientContext context;
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub_->PrepareCall(&context, method, &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    for (const std::string& m : messages) {
      grpc::Slice slice(m);
      grpc::ByteBuffer buffer(&slice, 1);
      call->Write(buffer, reinterpret_cast<void*>(2));
      EXPECT_TRUE(cq.Next(&tag, &ok));
      if (!ok) break;  // The server ended the call.
    }
    call->WritesDone(reinterpret_cast<void*>(3));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return status;
  }

  ObjectsService objects_{nullptr, nullptr, repair::ScrubberOptions{}, CallRules{}};
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

void ExpectRefused(const grpc::Status& s, const std::string& text) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find(text), std::string::npos) << s.error_message();
}

TEST_F(RawRequestTest, MalformedFirstMessagesAreRefusedByName) {
  // Field 2 (data) declares 10 bytes and carries 5.
  const std::string cut = std::string("\x12\x0a", 2) + "short";
  for (const char* method : {"/ecd.v1.Objects/Encode", "/ecd.v1.Objects/Update"}) {
    grpc::Status s = Stream(method, {cut});
    ExpectRefused(s, "is not a valid protobuf message: field 2 is cut short");
    ExpectRefused(s, "nothing was stored");
  }
  ExpectRefused(Stream("/ecd.v1.Objects/Encode", {}), "empty Encode stream");
  v1::EncodeRequest no_header;
  no_header.set_data("data");
  ExpectRefused(Stream("/ecd.v1.Objects/Encode", {no_header.SerializeAsString()}),
                "the first EncodeRequest must carry a header (name, shape)");
  ExpectRefused(Stream("/ecd.v1.Objects/Update", {no_header.SerializeAsString()}),
                "the first UpdateRequest must carry a header (name, offset)");
}

TEST_F(RawRequestTest, TheServiceStaysUpAfterMalformedStreams) {
  for (int i = 0; i < 3; ++i) {
    ExpectRefused(Stream("/ecd.v1.Objects/Encode", {std::string("\x08", 1)}),
                  "a varint field is truncated");
  }
  // A well-formed first message gets past the parse, to the header's own checks (here an
  // unknown matrix type), which come before the store.
  v1::EncodeRequest bad_matrix;
  bad_matrix.mutable_header()->set_name("x");
  bad_matrix.mutable_header()->set_matrix(static_cast<v1::MatrixType>(99));
  ExpectRefused(Stream("/ecd.v1.Objects/Encode", {bad_matrix.SerializeAsString()}),
                "unknown matrix type 99");
}

// A proto3 string field holding `value` (field 1: the name in every ecd.v1 request).
std::string NameField(const std::string& value) {
  return std::string(1, '\x0a') + static_cast<char>(value.size()) + value;
}

const char kNotUtf8[] = "a\xff\xc0z";

// gRPC alone answers a request that does not parse with INTERNAL and no message (and libprotobuf
// logs an ERROR line).
TEST_F(RawRequestTest, WithoutTheInterceptorANameThatIsNotUtf8IsInternal) {
  const grpc::Status s = Stream("/ecd.v1.Objects/Stat", {NameField(kNotUtf8)});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(s.error_message(), "");
}

// ecd's interceptor makes it INVALID_ARGUMENT that says why (the handlers never run: the null
// store is never reached). Read and GetBlock read their request themselves and say the same.
class RequestParseTest : public RawRequestTest {
 protected:
  void SetUp() override {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(std::make_unique<RequestParseFailureFactory>());
    builder_.experimental().SetInterceptorCreators(std::move(creators));
    RawRequestTest::SetUp();
  }
};

TEST_F(RequestParseTest, ANameThatIsNotUtf8IsInvalidArgumentOnEveryCall) {
  for (const char* method : {"/ecd.v1.Objects/Stat", "/ecd.v1.Objects/Delete",
                             "/ecd.v1.Objects/Recover", "/ecd.v1.Objects/Scrub"}) {
    const grpc::Status s = Stream(method, {NameField(kNotUtf8)});
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_EQ(s.error_message(),
              std::string("the ") + method +
                  " request does not parse: its object name (or another string in it) is not "
                  "valid UTF-8, or its bytes are not protobuf; send names as UTF-8 text. Nothing "
                  "was done");
  }
  for (const char* method : {"/ecd.v1.Objects/Read", "/ecd.v1.Objects/GetBlock"}) {
    ExpectRefused(Stream(method, {NameField(kNotUtf8)}),
                  "does not parse: its object name (or another string in it) is not valid UTF-8");
  }
  // Statuses the handlers send are left as they are.
  ExpectRefused(Stream("/ecd.v1.Objects/Encode", {std::string("\x08", 1)}),
                "a varint field is truncated");
}

TEST(RouteProtobufLogsTest, AStringThatIsNotUtf8IsNotAnErrorLineOtherLinesAreOurs) {
  RouteProtobufLogs();
  ::testing::internal::CaptureStderr();
  v1::StatRequest request;
  EXPECT_FALSE(request.ParseFromString(NameField(kNotUtf8)));
  GOOGLE_LOG(WARNING) << "a line of libprotobuf's own";
  const std::string err = ::testing::internal::GetCapturedStderr();
  google::protobuf::SetLogHandler(nullptr);
  EXPECT_EQ(err.find("UTF-8"), std::string::npos) << err;
  EXPECT_EQ(err.find("[libprotobuf"), std::string::npos) << err;
  EXPECT_NE(err.find(" WARN libprotobuf "), std::string::npos) << err;
  EXPECT_NE(err.find(": a line of libprotobuf's own\n"), std::string::npos) << err;
}

// The stream idle timer on the wire: a client that opens an Encode and sends nothing is
// cancelled after the timeout with a status naming the flag; one that sends within it is not.
class StreamIdleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    builder_.RegisterService(&objects_);
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = std::make_unique<grpc::GenericStub>(server_->InProcessChannel({}));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // Opens an Encode stream, waits `pause`, then sends `first` (if not empty) and half-closes.
  grpc::Status EncodeAfter(absl::Duration pause, const std::string& first) {
    grpc::ClientContext context;
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        stub_->PrepareCall(&context, "/ecd.v1.Objects/Encode", &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    absl::SleepFor(pause);
    if (!first.empty()) {
      grpc::Slice slice(first);
      grpc::ByteBuffer buffer(&slice, 1);
      call->Write(buffer, reinterpret_cast<void*>(2));
      EXPECT_TRUE(cq.Next(&tag, &ok));
    }
    call->WritesDone(reinterpret_cast<void*>(3));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return status;
  }

  StreamIdleTimer idle_{absl::Milliseconds(300)};
  ObjectsService objects_{
      nullptr, nullptr, repair::ScrubberOptions{},
      CallRules{.authorizer = nullptr, .limiter = nullptr, .limits = {}, .idle = &idle_}};
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

TEST_F(StreamIdleTest, AStreamThatSendsNothingIsCancelledNamingTheFlag) {
  const absl::Time start = absl::Now();
  const grpc::Status s = EncodeAfter(absl::Seconds(2), "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_EQ(s.error_message(),
            "ecd cancelled the encode: the client sent nothing for 300ms (--stream-idle-timeout)");
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_EQ(idle_.cancelled_calls(), 1u);
}

TEST_F(StreamIdleTest, AStreamThatSendsInTimeIsNotCancelled) {
  // Its header reaches the handler's own checks (an unknown matrix type, before the store).
  v1::EncodeRequest bad_matrix;
  bad_matrix.mutable_header()->set_name("x");
  bad_matrix.mutable_header()->set_matrix(static_cast<v1::MatrixType>(99));
  ExpectRefused(EncodeAfter(absl::Milliseconds(100), bad_matrix.SerializeAsString()),
                "unknown matrix type 99");
  EXPECT_EQ(idle_.cancelled_calls(), 0u);
}

// Reads the next response of a Read call. Under ThreadSanitizer the client's reads of it are not
// checked: TSan cannot see gRPC hand the server's bytes to a client in the same process (in
// process, the sink's own slices and the store's stripe buffers; over TCP, receive buffers at
// addresses gRPC freed and allocated unseen), so it would take every read of them for a race.
// The server's threads (the read, the sink's sender) are checked as everywhere else.
// (The TSan runtime defines these; elsewhere they are null. The TSan build undefines
// __SANITIZE_THREAD__ for the prebuilt libraries' headers, see CMakeLists.txt.)
// NOLINTBEGIN(bugprone-reserved-identifier): the TSan runtime's names.
extern "C" [[gnu::weak]] void __tsan_ignore_thread_begin();
extern "C" [[gnu::weak]] void __tsan_ignore_thread_end();
// NOLINTEND(bugprone-reserved-identifier)
bool Next(grpc::ClientReader<v1::ReadResponse>& reader, v1::ReadResponse* response) {
  if (__tsan_ignore_thread_begin == nullptr) return reader.Read(response);
  __tsan_ignore_thread_begin();
  const bool more = reader.Read(response);
  __tsan_ignore_thread_end();
  return more;
}

class ReadStreamTest : public store::TempStoreTest {
 protected:
  void SetUp() override {
    store::TempStoreTest::SetUp();
    objects_ = std::make_unique<ObjectsService>(store_.get(), nullptr, repair::ScrubberOptions{},
                                                CallRules{});
    builder_.RegisterService(objects_.get());
    // Reads go in process (gRPC hands the sink's own slices to the client, so a pin released
    // too early shows as wrong bytes) or over loopback TCP, as ecctl reads.
    int port = 0;
    builder_.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    stub_ = v1::Objects::NewStub(server_->InProcessChannel({}));
    tcp_stub_ = v1::Objects::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    store::TempStoreTest::TearDown();
  }

  // Reads `name` [offset, offset + length) over the wire: the bytes, the message count, the
  // size and reconstructed-block count the messages carried, and the call's status.
  struct Got {
    std::string bytes;
    int messages = 0;
    uint64_t object_size = 0;
    uint32_t reconstructed = 0;
    grpc::Status status;
  };
  void ExpectMessagesCarryTheObjectInOrder(const std::string& name, uint64_t block_size,
                                           const std::vector<uint8_t>& data);
  Got ReadAll(const std::string& name, uint64_t offset = 0, uint64_t length = 0,
              bool over_tcp = false) {
    grpc::ClientContext context;
    v1::ReadRequest request;
    request.set_name(name);
    request.set_offset(offset);
    request.set_length(length);
    auto reader = (over_tcp ? tcp_stub_ : stub_)->Read(&context, request);
    Got got;
    v1::ReadResponse r;
    while (Next(*reader, &r)) {
      ++got.messages;
      EXPECT_LE(r.data().size(), 1u << 20);
      if (got.messages == 1) got.object_size = r.object_size();
      got.reconstructed += r.reconstructed_blocks();
      got.bytes += r.data();
    }
    got.status = reader->Finish();
    return got;
  }

  std::unique_ptr<ObjectsService> objects_;
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Objects::Stub> stub_;      // In process.
  std::unique_ptr<v1::Objects::Stub> tcp_stub_;  // Over loopback TCP.
};

std::string AsString(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// 5 MiB and 12345 bytes stored with `block_size`: six messages, five full (1 MiB) and a short
// last one; a range across message and stripe boundaries: three. Blocks of 64 KiB are copied
// into the messages, blocks of 1 MiB go out from the stripe buffers themselves (pinned).
void ReadStreamTest::ExpectMessagesCarryTheObjectInOrder(const std::string& name,
                                                         uint64_t block_size,
                                                         const std::vector<uint8_t>& data) {
  ASSERT_TRUE(Put(name, data, 4, 2, block_size).ok());
  Got got = ReadAll(name);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.messages, 6);
  EXPECT_EQ(got.object_size, data.size());
  EXPECT_EQ(got.reconstructed, 0u);
  EXPECT_TRUE(got.bytes == AsString(data)) << "the bytes read differ from the bytes stored";
  got = ReadAll(name, (1 << 20) - 7, (2 << 20) + 100);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.messages, 3);
  EXPECT_TRUE(got.bytes == AsString(std::vector<uint8_t>(data.begin() + (1 << 20) - 7,
                                                         data.begin() + (3 << 20) + 93)));
}

TEST_F(ReadStreamTest, MessagesCarryTheObjectInOrder) {
  const std::vector<uint8_t> data = store::RandomBytes((5 << 20) + 12345, 77);
  ExpectMessagesCarryTheObjectInOrder("big", 64 << 10, data);
  // A read of nothing: one empty message.
  ASSERT_TRUE(Put("empty", {}).ok());
  Got got = ReadAll("empty");
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.messages, 1);
  EXPECT_TRUE(got.bytes.empty());
}

// Pinned blocks go out in the same messages as copied ones; blocks of 768 KiB are pinned too,
// each ending its message.
TEST_F(ReadStreamTest, PinnedBlocksGoOutInTheSameMessagesAndBytes) {
  const std::vector<uint8_t> data = store::RandomBytes((5 << 20) + 12345, 79);
  ExpectMessagesCarryTheObjectInOrder("mib", 1 << 20, data);
  // Objects of 6 stripes and more: the read reuses its buffers once their pins are gone.
  const std::vector<uint8_t> big = store::RandomBytes(24 << 20, 80);
  ASSERT_TRUE(Put("odd", big, 4, 2, 768 << 10).ok());
  ASSERT_TRUE(Put("many", big, 4, 2, 1 << 20).ok());
  for (const char* name : {"odd", "many"}) {
    for (auto [offset, length] :
         {std::pair<uint64_t, uint64_t>{0, 0}, {1000, 0}, {1000, 3 << 20}}) {
      for (bool over_tcp : {false, true}) {
        Got got = ReadAll(name, offset, length, over_tcp);
        ASSERT_TRUE(got.status.ok()) << got.status.error_message();
        const auto end = length == 0 ? big.end() : big.begin() + offset + length;
        EXPECT_TRUE(got.bytes == AsString(std::vector<uint8_t>(big.begin() + offset, end)))
            << name << " offset " << offset << (over_tcp ? " over TCP" : " in process");
      }
    }
  }
}

// An Encode or Update whose header name is not UTF-8 is refused by the name rule, by name.
TEST_F(ReadStreamTest, AHeaderNameThatIsNotUtf8IsRefusedByTheNameRule) {
  auto raw = std::make_unique<grpc::GenericStub>(server_->InProcessChannel({}));
  const std::string want =
      "object name is not valid UTF-8 at byte 1 of \"a\\xff\\xc0z\"; names are UTF-8 text";
  for (const char* method : {"/ecd.v1.Objects/Encode", "/ecd.v1.Objects/Update"}) {
    grpc::ClientContext context;
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
        raw->PrepareCall(&context, method, &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    // Field 1, the header: its name and one more field (M of 4, or offset 0).
    const std::string header = NameField(kNotUtf8) + std::string("\x10\x04", 2);
    grpc::Slice slice(std::string(1, '\x0a') + static_cast<char>(header.size()) + header +
                      std::string("\x12\x03xyz", 5));
    grpc::ByteBuffer buffer(&slice, 1);
    call->Write(buffer, reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    call->WritesDone(reinterpret_cast<void*>(3));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_EQ(status.error_message(), want) << method;
  }
  absl::StatusOr<std::vector<store::ObjectStatus>> objects = store::ListAll(*store_);
  ASSERT_TRUE(objects.ok());
  EXPECT_TRUE(objects->empty());
}

// Clients that cancel after two messages, three times, then a whole read: the service stays up,
// with blocks copied into the messages (64 KiB) and with blocks pinned (1 MiB, 8 stripes: the
// read may be waiting for a pin held by a message that will never be sent).
TEST_F(ReadStreamTest, AClientThatLeavesMidReadLeavesTheServiceServing) {
  // In process, whose timing makes the read wait for a pin of a message that is never sent (it
  // hung there before the sender dropped its queue on a failed Write and the read gave up on a
  // reader gone; over TCP it did not), and over TCP, as ecctl reads.
  const std::vector<v1::Objects::Stub*> stubs = {stub_.get(), tcp_stub_.get()};
  for (uint64_t block_size : {uint64_t{64} << 10, uint64_t{1} << 20}) {
    const std::string name = "obj" + std::to_string(block_size);
    const std::vector<uint8_t> data =
        store::RandomBytes(block_size == 1 << 20 ? 32 << 20 : 8 << 20, 78);
    ASSERT_TRUE(Put(name, data, 4, 2, block_size).ok());
    for (int round = 0; round < 6; ++round) {
      v1::Objects::Stub* stub = stubs[static_cast<size_t>(round) % stubs.size()];
      grpc::ClientContext context;
      v1::ReadRequest request;
      request.set_name(name);
      auto reader = stub->Read(&context, request);
      v1::ReadResponse r;
      ASSERT_TRUE(Next(*reader, &r));
      ASSERT_TRUE(Next(*reader, &r));
      context.TryCancel();  // Two messages in; the sender may be inside a Write.
      while (Next(*reader, &r)) {
      }
      EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
    }
    Got got = ReadAll(name);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_TRUE(got.bytes == AsString(data)) << name;
  }
}

// Devices and Rebuilds over a real store and repair planner, in process.
class RepairServicesTest : public store::TempStoreTest {
 protected:
  void SetUp() override {
    store::TempStoreTest::SetUp();
    repair::RepairPlannerOptions options;
    options.repair_delay = absl::Hours(1);
    planner_ = std::make_unique<repair::RepairPlanner>(store_.get(), options);
    devices_ = std::make_unique<DevicesService>(store_.get(), planner_.get(), CallRules{});
    rebuilds_ = std::make_unique<RebuildsService>(planner_.get(), CallRules{});
    builder_.RegisterService(devices_.get());
    builder_.RegisterService(rebuilds_.get());
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    devices_stub_ = v1::Devices::NewStub(server_->InProcessChannel({}));
    rebuilds_stub_ = v1::Rebuilds::NewStub(server_->InProcessChannel({}));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    planner_.reset();  // before the store
    store::TempStoreTest::TearDown();
  }

  grpc::Status Replace(uint32_t id, v1::ReplaceDeviceResponse* response) {
    grpc::ClientContext context;
    v1::ReplaceDeviceRequest request;
    request.set_id(id);
    return devices_stub_->Replace(&context, request, response);
  }
  grpc::Status SetState(uint32_t id, v1::DeviceState state) {
    grpc::ClientContext context;
    v1::SetDeviceStateRequest request;
    request.set_id(id);
    request.set_state(state);
    v1::SetDeviceStateResponse response;
    return devices_stub_->SetState(&context, request, &response);
  }
  grpc::Status SetRepair(const v1::SetRepairRequest& request, v1::RepairStatus* response) {
    grpc::ClientContext context;
    return rebuilds_stub_->SetRepair(&context, request, response);
  }
  v1::RepairStatus GetRepairStatus() {
    grpc::ClientContext context;
    v1::RepairStatus status;
    EXPECT_TRUE(rebuilds_stub_->GetRepairStatus(&context, {}, &status).ok());
    return status;
  }

  std::unique_ptr<repair::RepairPlanner> planner_;
  std::unique_ptr<DevicesService> devices_;
  std::unique_ptr<RebuildsService> rebuilds_;
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Devices::Stub> devices_stub_;
  std::unique_ptr<v1::Rebuilds::Stub> rebuilds_stub_;
};

void ExpectStatus(const grpc::Status& s, grpc::StatusCode code, const std::string& text) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_NE(s.error_message().find(text), std::string::npos) << s.error_message();
}

TEST_F(RepairServicesTest, ReplaceTakesOnlyAFailedOrDownDevice) {
  v1::ReplaceDeviceResponse response;
  ExpectStatus(Replace(99, &response), grpc::StatusCode::NOT_FOUND, "device 99 not found");
  ExpectStatus(Replace(0, &response), grpc::StatusCode::FAILED_PRECONDITION,
               "device 0 is online: only a failed or down device is replaced");
  ASSERT_TRUE(SetState(0, v1::DEVICE_STATE_FAILED).ok());
  const grpc::Status s = Replace(0, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.device().id(), 0u);
  EXPECT_EQ(response.device().state(), v1::DEVICE_STATE_ONLINE);
  ASSERT_TRUE(store_->admin().MarkDeviceDown(1, "unplugged").ok());
  ASSERT_TRUE(Replace(1, &response).ok());
  EXPECT_EQ(response.device().state(), v1::DEVICE_STATE_ONLINE);
  EXPECT_EQ(response.device().down_reason(), "");
}

TEST_F(RepairServicesTest, DownDevicesAreListedAndRefusedWhereTheyCannotGo) {
  ASSERT_TRUE(store_->admin().MarkDeviceDown(2, "writes kept failing").ok());
  grpc::ClientContext context;
  v1::ListDevicesResponse list;
  ASSERT_TRUE(devices_stub_->List(&context, {}, &list).ok());
  ASSERT_GT(list.devices_size(), 2);
  EXPECT_EQ(list.devices(2).state(), v1::DEVICE_STATE_DOWN);
  EXPECT_EQ(list.devices(2).down_reason(), "writes kept failing");
  EXPECT_GT(list.devices(2).down_since_unix_ms(), 0);
  EXPECT_EQ(list.devices(3).down_since_unix_ms(), 0);
  // The file system under them: it holds the catalog and every namespace file.
  ASSERT_EQ(list.file_systems_size(), 1);
  EXPECT_TRUE(list.file_systems(0).catalog());
  EXPECT_EQ(list.file_systems(0).devices_size(), list.devices_size());
  EXPECT_GT(list.file_systems(0).size_bytes(), 0u);
  EXPECT_GT(list.file_systems(0).free_bytes(), 0u);
  EXPECT_LE(list.file_systems(0).free_bytes(), list.file_systems(0).size_bytes());
  EXPECT_EQ(list.file_systems(0).reserve_bytes(), store::StoreOptions().fs_reserve_bytes);
  ExpectStatus(SetState(2, v1::DEVICE_STATE_FAILING), grpc::StatusCode::FAILED_PRECONDITION,
               "device 2 is down: nothing can be read off it");
  ExpectStatus(SetState(3, v1::DEVICE_STATE_DOWN), grpc::StatusCode::INVALID_ARGUMENT,
               "ecd marks devices DOWN itself");
  ASSERT_TRUE(SetState(4, v1::DEVICE_STATE_FAILED).ok());
  ExpectStatus(SetState(4, v1::DEVICE_STATE_FAILING), grpc::StatusCode::FAILED_PRECONDITION,
               "device 4 is failed: nothing can be moved off it");
}

TEST_F(RepairServicesTest, SetRepairChangesWhatItSetsAndKeepsTheRest) {
  v1::RepairStatus status;
  ExpectStatus(SetRepair({}, &status), grpc::StatusCode::INVALID_ARGUMENT,
               "set paused or rate_bytes_per_sec");
  v1::SetRepairRequest pause;
  pause.set_paused(true);
  ASSERT_TRUE(SetRepair(pause, &status).ok());
  EXPECT_TRUE(status.paused());
  v1::SetRepairRequest rate;
  rate.set_rate_bytes_per_sec(1 << 20);
  ASSERT_TRUE(SetRepair(rate, &status).ok());
  EXPECT_TRUE(status.paused());
  EXPECT_EQ(status.rate_bytes_per_sec(), 1u << 20);
  v1::SetRepairRequest resume;
  resume.set_paused(false);
  ASSERT_TRUE(SetRepair(resume, &status).ok());
  EXPECT_FALSE(status.paused());
  EXPECT_EQ(status.rate_bytes_per_sec(), 1u << 20);

  status = GetRepairStatus();
  EXPECT_FALSE(status.paused());
  EXPECT_EQ(status.rate_bytes_per_sec(), 1u << 20);
  EXPECT_EQ(status.delay_seconds(), 3600u);
  grpc::ClientContext context;
  v1::ListRebuildsResponse list;
  ASSERT_TRUE(rebuilds_stub_->List(&context, {}, &list).ok());
  EXPECT_EQ(list.repair().rate_bytes_per_sec(), 1u << 20);
}

TEST_F(RepairServicesTest, TheStatusCountsTheStoreAndTheRepair) {
  ASSERT_TRUE(Put("obj", store::RandomBytes(100000, 5)).ok());  // 4+2, 7 stripes
  ASSERT_TRUE(SetState(0, v1::DEVICE_STATE_FAILED).ok());
  ASSERT_TRUE(planner_->WaitIdle(absl::Seconds(30)));
  const v1::RepairStatus status = GetRepairStatus();
  EXPECT_EQ(status.stripes_queued(), 0u);
  EXPECT_EQ(status.eta_seconds(), -1);
  ASSERT_EQ(status.stripes_by_redundancy_size(), 3);
  EXPECT_EQ(status.stripes_by_redundancy(2), 7u);
  EXPECT_EQ(status.blocks_repaired(), status.stripes_repaired());
  EXPECT_GT(status.bytes_repaired(), 0u);
  EXPECT_GT(status.last_progress_unix_ms(), 0);
}

}  // namespace
}  // namespace ecd::daemon
