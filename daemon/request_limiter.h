// RequestLimiter: bounds the ecd.v1 calls in flight, per client and in all, and counts the
// calls each input limit refused (for ecd_limit_rejections_total).
//
//   auto admit = RequestLimiter::Admit(limiter_, context);  // at the top of a handler
//   if (!admit.ok()) return admit.status();                 // RESOURCE_EXHAUSTED
//
// The admission holds its slots until it goes out of scope, i.e. until the handler returns.
// Thread safety: all methods may be called concurrently.
#ifndef ECD_DAEMON_REQUEST_LIMITER_H_
#define ECD_DAEMON_REQUEST_LIMITER_H_

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

// The limits whose refusals are counted, and their label values.
enum class Limit {
  kStreamsPerClient,  // "max-streams-per-client"
  kStreams,           // "max-streams"
  kObjectSize,        // "max-object-size"
  kIngestRecords,     // "max-ingest-records"
  kMessageSize,       // "max-message-size" (the messages ecd checks itself: Encode, Update)
};
inline constexpr int kLimitCount = 5;
const char* LimitName(Limit limit);

// The client a gRPC peer string stands for: the address without its port ("ipv4:10.0.0.5",
// "ipv6:[::1]"), so that the connections of one host count together; "unix" for every
// Unix-socket peer.
std::string ClientOf(absl::string_view peer);

// Where a call comes from: gRPC's peer string as is, except for a connection ecd accepted
// itself and handed to gRPC, which gRPC names "fd:N": that is the address the connection came
// from, as the resolver set here says ("ipv4:127.0.0.1:51000"; "fd:N" when it does not know).
std::string ResolvePeer(absl::string_view peer);
// Sets the resolver of ResolvePeer for the whole process (null: none). Set before serving and
// cleared after; `resolve` is called from any thread and must be thread-safe.
void SetFdPeerResolver(std::function<std::string(int fd)> resolve);

class RequestLimiter {
 public:
  RequestLimiter(uint32_t max_per_client, uint32_t max_total)
      : max_per_client_(max_per_client), max_total_(max_total) {}

  class Admission {
   public:
    Admission(Admission&& other) noexcept;
    Admission& operator=(Admission&&) = delete;
    ~Admission();
    bool ok() const { return status_.ok(); }
    // OK, or RESOURCE_EXHAUSTED naming the limit, its value and the calls in flight.
    const grpc::Status& status() const { return status_; }

   private:
    friend class RequestLimiter;
    Admission(RequestLimiter* limiter, std::string client, grpc::Status status)
        : limiter_(limiter), client_(std::move(client)), status_(std::move(status)) {}
    RequestLimiter* limiter_;  // null once moved from, or when refused
    std::string client_;
    grpc::Status status_;
  };

  // Takes one slot of `client` and one of the total, or none and a refusal.
  Admission Admit(const std::string& client);
  Admission Admit(const grpc::ServerContext* context) {
    return Admit(ClientOf(ResolvePeer(context->peer())));
  }
  // Admit through `limiter`, or an admission that holds nothing when it is null (no limits).
  static Admission Admit(RequestLimiter* limiter, const grpc::ServerContext* context) {
    if (limiter == nullptr) return Admission(nullptr, "", grpc::Status::OK);
    return limiter->Admit(context);
  }

  // Counts one refusal by a limit enforced elsewhere (Admit counts its own).
  void CountRejection(Limit limit) {
    rejections_[static_cast<int>(limit)].fetch_add(1, std::memory_order_relaxed);
  }

  uint32_t in_flight() const;
  uint32_t in_flight(const std::string& client) const;
  uint64_t rejections(Limit limit) const {
    return rejections_[static_cast<int>(limit)].load(std::memory_order_relaxed);
  }

 private:
  void Release(const std::string& client);

  const uint32_t max_per_client_;
  const uint32_t max_total_;
  mutable Mutex mu_;
  uint32_t total_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint32_t> clients_ ABSL_GUARDED_BY(mu_);  // Only clients with calls
  std::array<std::atomic<uint64_t>, kLimitCount> rejections_{};
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_REQUEST_LIMITER_H_
