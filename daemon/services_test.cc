// ObjectsService's Encode and Update on the wire: their requests are parsed by DataMessage, so
// malformed bytes and a missing header must be refused by name before the store is touched (the
// service here runs over a null store: reaching it would crash the test). Later messages are
// checked over a real store in tests/integration/limits_client.py.
#include "daemon/services.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ecd/v1/ecd.pb.h"

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

  ObjectsService objects_{nullptr, nullptr, store::ScrubberOptions{}};
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

}  // namespace
}  // namespace ecd::daemon
