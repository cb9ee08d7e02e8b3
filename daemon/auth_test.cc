// Tests of token parsing, the role table and the per-handler guards of every ecd.v1 method.
#include "daemon/auth.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "daemon/catalog_service.h"
#include "daemon/cxl_service.h"
#include "daemon/devices_service.h"
#include "daemon/objects_service.h"
#include "daemon/rebuilds_service.h"

namespace ecd::daemon {
namespace {

const std::string kRead = "read-token-0123456789";
const std::string kOper = "oper-token-0123456789";
const std::string kAdmin = "admin-token-0123456789";

std::vector<Token> ThreeTokens() {
  return {{kRead, Role::kReadOnly, "reader"},
          {kOper, Role::kOperator, "ops"},
          {kAdmin, Role::kAdmin, "root"}};
}

// Every method of the ecd.v1 services, from the compiled-in descriptors.
std::vector<std::string> ProtoMethods() {
  std::vector<std::string> out;
  const google::protobuf::FileDescriptor* file =
      google::protobuf::DescriptorPool::generated_pool()->FindFileByName("ecd/v1/ecd.proto");
  EXPECT_NE(file, nullptr);
  for (int i = 0; file != nullptr && i < file->service_count(); ++i) {
    for (int j = 0; j < file->service(i)->method_count(); ++j) {
      out.push_back(absl::StrCat("/", file->service(i)->full_name(), "/",
                                 file->service(i)->method(j)->name()));
    }
  }
  return out;
}

TEST(ParseTokens, ReadsLinesCommentsAndNames) {
  absl::StatusOr<std::vector<Token>> t =
      ParseTokens("# ecd tokens\n\n" + kRead + " read-only alice\n  " + kOper +
                  "\toperator  # ops\n" + kAdmin + " admin\r\n");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].secret, kRead);
  EXPECT_EQ((*t)[0].role, Role::kReadOnly);
  EXPECT_EQ((*t)[0].name, "alice");
  EXPECT_EQ((*t)[1].secret, kOper);
  EXPECT_EQ((*t)[1].role, Role::kOperator);
  EXPECT_EQ((*t)[1].name, "line4");
  EXPECT_EQ((*t)[2].secret, kAdmin);
  EXPECT_EQ((*t)[2].role, Role::kAdmin);
}

TEST(ParseTokens, RefusesMalformedFilesNamingTheLine) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {kRead + "\n", "line 1: a token without a role"},
      {"#\n" + kRead + " reader x y\n", "line 2: too many fields"},
      {kRead + " superuser\n",
       "line 1: unknown role \"superuser\"; use read-only, operator or admin"},
      {"short admin\n", "line 1: the token is 5 characters; use at least 16"},
      {kRead + " admin\n" + kRead + " read-only\n", "line 2: the same token twice"},
      {"# nothing\n\n", "no tokens: the file would lock every client out"},
      {"", "no tokens"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Token>> t = ParseTokens(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status();
  }
}

TEST(ConstantTimeEquals, ComparesBytesAndLengths) {
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("abc\0", 4), "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

TEST(Roles, ParseAndOrder) {
  EXPECT_EQ(*ParseRole("read-only"), Role::kReadOnly);
  EXPECT_EQ(*ParseRole("operator"), Role::kOperator);
  EXPECT_EQ(*ParseRole("admin"), Role::kAdmin);
  EXPECT_FALSE(ParseRole("open").ok());
  EXPECT_FALSE(ParseRole("Admin").ok());
  EXPECT_LT(Role::kReadOnly, Role::kOperator);
  EXPECT_LT(Role::kOperator, Role::kAdmin);
}

TEST(MethodTable, NamesEveryProtoMethodAndNothingElse) {
  std::set<std::string> table;
  for (const MethodRole& m : MethodRoles()) {
    EXPECT_TRUE(table.insert(m.method).second) << "twice: " << m.method;
  }
  std::set<std::string> proto;
  for (const std::string& m : ProtoMethods()) {
    proto.insert(m);
    EXPECT_TRUE(table.count(m)) << m << " is not in the role table (it would need admin)";
    EXPECT_NE(RequiredRole(m), Role::kOpen) << m;
  }
  EXPECT_EQ(proto.size(), 26u);
  for (const std::string& m : table) {
    if (RequiredRole(m) == Role::kOpen) continue;  // health, reflection
    EXPECT_TRUE(proto.count(m)) << m << " is in the table but not in ecd.proto";
  }
}

// docs/security.md's role table is the code's table, row for row.
TEST(MethodTable, MatchesDocsSecurityMd) {
  std::ifstream in(std::string(ECD_SOURCE_DIR) + "/docs/security.md");
  ASSERT_TRUE(in) << "cannot read docs/security.md";
  std::set<std::pair<std::string, std::string>> doc;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `/", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    const size_t bar = line.find('|', end);
    ASSERT_NE(bar, std::string::npos) << line;
    std::string role = line.substr(bar + 1);
    role.erase(0, role.find_first_not_of(' '));
    role.erase(role.find_first_of(" |"));
    doc.insert({line.substr(3, end - 3), role});
  }
  std::set<std::pair<std::string, std::string>> code;
  for (const MethodRole& m : MethodRoles()) code.insert({m.method, std::string(RoleName(m.role))});
  EXPECT_EQ(doc, code) << "update the table in docs/security.md from kMethodRoles";
}

TEST(MethodTable, RolesOfTheIssue) {
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/Read"), Role::kReadOnly);
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/List"), Role::kReadOnly);
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/Encode"), Role::kOperator);
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/Update"), Role::kOperator);
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/Delete"), Role::kOperator);
  EXPECT_EQ(RequiredRole("/ecd.v1.Devices/SetState"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/ecd.v1.Devices/Replace"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/ecd.v1.Rebuilds/SetRepair"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/ecd.v1.Rebuilds/GetRepairStatus"), Role::kReadOnly);
  EXPECT_EQ(RequiredRole("/ecd.v1.Cxl/Inject"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/ecd.v1.Cxl/Ingest"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/ecd.v1.Cxl/SetInterruptPolicy"), Role::kAdmin);
  EXPECT_EQ(RequiredRole("/grpc.health.v1.Health/Check"), Role::kOpen);
  // Fail closed: anything unknown needs admin.
  EXPECT_EQ(RequiredRole("/ecd.v1.Objects/Frobnicate"), Role::kAdmin);
  EXPECT_EQ(RequiredRole(""), Role::kAdmin);
}

TEST(Authorizer, OffUntilLoaded) {
  Authorizer auth;
  EXPECT_FALSE(auth.enabled());
  EXPECT_TRUE(auth.Check("/ecd.v1.Devices/SetState", {}).ok());
  auth.SetTokens(ThreeTokens());
  EXPECT_TRUE(auth.enabled());
  EXPECT_EQ(auth.Check("/ecd.v1.Devices/SetState", {}).code(), absl::StatusCode::kUnauthenticated);
}

TEST(Authorizer, EachCase) {
  Authorizer auth;
  auth.SetTokens(ThreeTokens());
  std::vector<absl::StatusCode> denied;
  auth.SetDeniedHook([&](absl::StatusCode c) { denied.push_back(c); });
  const std::string bearer_read = "Bearer " + kRead;
  const std::string bearer_oper = "Bearer " + kOper;
  const std::string bearer_admin = "bearer  " + kAdmin;  // scheme is case-insensitive
  const std::string wrong = "Bearer " + kRead + "x";
  const std::string basic = "Basic " + kAdmin;

  absl::Status none = auth.Check("/ecd.v1.Objects/Read", {});
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(none.message().find("needs a token"), std::string::npos) << none;
  absl::Status bad = auth.Check("/ecd.v1.Objects/Read", {wrong});
  EXPECT_EQ(bad.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(bad.message().find("not in ecd's token file"), std::string::npos) << bad;
  EXPECT_EQ(auth.Check("/ecd.v1.Objects/Read", {basic}).code(), absl::StatusCode::kUnauthenticated);

  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/Read", {bearer_read}).ok());
  absl::Status low = auth.Check("/ecd.v1.Objects/Encode", {bearer_read});
  EXPECT_EQ(low.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(low.message(),
            "/ecd.v1.Objects/Encode needs the operator role; token \"reader\" has read-only. Use "
            "a token with that role");
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/Encode", {bearer_oper}).ok());
  EXPECT_EQ(auth.Check("/ecd.v1.Devices/SetState", {bearer_oper}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(auth.Check("/ecd.v1.Devices/SetState", {bearer_admin}).ok());
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/Read", {bearer_admin}).ok());
  EXPECT_EQ(auth.Check("/ecd.v1.Objects/Frobnicate", {bearer_oper}).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(auth.Check("/grpc.health.v1.Health/Check", {}).ok());
  // A second header with a good token counts.
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/Encode", {wrong, bearer_oper}).ok());

  EXPECT_EQ(denied, (std::vector<absl::StatusCode>{
                        absl::StatusCode::kUnauthenticated, absl::StatusCode::kUnauthenticated,
                        absl::StatusCode::kUnauthenticated, absl::StatusCode::kPermissionDenied,
                        absl::StatusCode::kPermissionDenied, absl::StatusCode::kPermissionDenied}));
}

class TempFile {
 public:
  explicit TempFile(const std::string& text, mode_t mode = 0600) {
    char name[] = "/tmp/ecd-auth-test.XXXXXX";
    const int fd = mkstemp(name);
    path_ = name;
    ::close(fd);
    Write(text);
    ::chmod(path_.c_str(), mode);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Authorizer, LoadReloadKeepsOldTableOnABadFile) {
  TempFile file(kRead + " read-only\n");
  Authorizer auth;
  std::string warning;
  ASSERT_TRUE(auth.Load(file.path(), &warning).ok());
  EXPECT_EQ(warning, "");
  const std::string read = "Bearer " + kRead;
  const std::string admin = "Bearer " + kAdmin;
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/List", {read}).ok());
  EXPECT_EQ(auth.Check("/ecd.v1.Objects/List", {admin}).code(), absl::StatusCode::kUnauthenticated);

  // Rotation: the old token goes, a new one comes.
  file.Write(kAdmin + " admin root\n");
  ASSERT_TRUE(auth.Load(file.path()).ok());
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/List", {admin}).ok());
  EXPECT_EQ(auth.Check("/ecd.v1.Objects/List", {read}).code(), absl::StatusCode::kUnauthenticated);

  file.Write(kRead + " wizard\n");
  absl::Status s = auth.Load(file.path());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(absl::StrCat("token file ", file.path(), ": line 1: unknown role")),
            std::string::npos)
      << s;
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/List", {admin}).ok());  // still the old table

  EXPECT_EQ(auth.Load("/nonexistent/ecd-tokens").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(auth.Check("/ecd.v1.Objects/List", {admin}).ok());
}

TEST(Authorizer, WarnsAboutAWorldReadableFile) {
  TempFile file(kRead + " read-only\n", 0644);
  Authorizer auth;
  std::string warning;
  ASSERT_TRUE(auth.Load(file.path(), &warning).ok());
  EXPECT_NE(warning.find("is readable by every user; chmod 0600"), std::string::npos) << warning;
}

// The real services on an in-process server, built over null store pointers: a handler that
// did not start with its guard would crash the test. Every ecd.v1 method is called with no
// token (UNAUTHENTICATED) and with a token one role below its own (PERMISSION_DENIED).
class GuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auth_.SetTokens(ThreeTokens());
    for (grpc::Service* s : std::initializer_list<grpc::Service*>{&objects_, &devices_, &rebuilds_,
                                                                  &cxl_, &catalog_}) {
      builder_.RegisterService(s);
    }
    server_ = builder_.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = std::make_unique<grpc::GenericStub>(server_->InProcessChannel({}));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  grpc::Status Call(const std::string& method, const std::string& token) {
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    grpc::CompletionQueue cq;
    grpc::Slice empty("");  // An empty message of any request type.
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    grpc::Status status;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
        stub_->PrepareUnaryCall(&context, method, request, &cq);
    call->StartCall();
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return status;
  }

  // Every call is checked against auth_; nothing else is limited.
  static CallRules Checked(const Authorizer* auth) {
    CallRules rules;
    rules.authorizer = auth;
    return rules;
  }

  Authorizer auth_;
  ObjectsService objects_{nullptr, nullptr, repair::ScrubberOptions{}, Checked(&auth_)};
  DevicesService devices_{nullptr, nullptr, Checked(&auth_)};
  RebuildsService rebuilds_{nullptr, Checked(&auth_)};
  CxlService cxl_{nullptr, nullptr, Checked(&auth_)};
  CatalogService catalog_{nullptr, "", Checked(&auth_)};
  grpc::ServerBuilder builder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

TEST_F(GuardTest, EveryMethodRefusesNoTokenAndABadToken) {
  for (const std::string& method : ProtoMethods()) {
    grpc::Status none = Call(method, "");
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
    EXPECT_NE(none.error_message().find(method), std::string::npos) << none.error_message();
    EXPECT_EQ(Call(method, "not-a-token-0123456789").error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << method;
  }
}

TEST_F(GuardTest, EveryMethodRefusesTheRoleBelowItsOwn) {
  int checked = 0;
  for (const std::string& method : ProtoMethods()) {
    const Role needed = RequiredRole(method);
    if (needed == Role::kReadOnly) continue;  // Nothing is below read-only.
    const std::string& below = needed == Role::kAdmin ? kOper : kRead;
    grpc::Status s = Call(method, below);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << method;
    EXPECT_NE(s.error_message().find(absl::StrCat("needs the ", RoleName(needed), " role")),
              std::string::npos)
        << s.error_message();
    ++checked;
  }
  EXPECT_EQ(checked, 13);  // 5 operator + 8 admin methods
}

}  // namespace
}  // namespace ecd::daemon
