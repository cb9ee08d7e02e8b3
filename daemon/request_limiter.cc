// RequestLimiter: per-client and total in-flight call counts, and refusal counters.
#include "daemon/request_limiter.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

const char* LimitName(Limit limit) {
  switch (limit) {
    case Limit::kStreamsPerClient:
      return "max-streams-per-client";
    case Limit::kStreams:
      return "max-streams";
    case Limit::kObjectSize:
      return "max-object-size";
    case Limit::kIngestRecords:
      return "max-ingest-records";
    case Limit::kMessageSize:
      return "max-message-size";
  }
  return "unknown";
}

std::string ClientOf(absl::string_view peer) {
  if (absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "unix-abstract:")) return "unix";
  if (absl::StartsWith(peer, "ipv6:[")) {
    const size_t close = peer.find(']');
    if (close != absl::string_view::npos) return std::string(peer.substr(0, close + 1));
  }
  if (absl::StartsWith(peer, "ipv4:")) {
    const size_t colon = peer.rfind(':');
    if (colon > 4) return std::string(peer.substr(0, colon));
  }
  return std::string(peer);
}

namespace {

std::function<std::string(int)>& FdPeerResolver() {
  static std::function<std::string(int)> resolve;
  return resolve;
}

}  // namespace

std::string ResolvePeer(absl::string_view peer) {
  absl::string_view number = peer;
  int fd = -1;
  if (absl::ConsumePrefix(&number, "fd:") && absl::SimpleAtoi(number, &fd) && FdPeerResolver()) {
    std::string address = FdPeerResolver()(fd);
    if (!address.empty()) return address;
  }
  return std::string(peer);
}

void SetFdPeerResolver(std::function<std::string(int fd)> resolve) {
  FdPeerResolver() = std::move(resolve);
}

RequestLimiter::Admission::Admission(Admission&& other) noexcept
    : limiter_(other.limiter_), client_(std::move(other.client_)), status_(other.status_) {
  other.limiter_ = nullptr;
}

RequestLimiter::Admission::~Admission() {
  if (limiter_ != nullptr) limiter_->Release(client_);
}

RequestLimiter::Admission RequestLimiter::Admit(const std::string& client) {
  MutexLock lock(mu_);
  uint32_t& mine = clients_[client];
  if (mine >= max_per_client_) {
    const uint32_t now = mine;
    if (mine == 0) clients_.erase(client);
    CountRejection(Limit::kStreamsPerClient);
    return Admission(
        nullptr, client,
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     absl::StrCat("too many concurrent calls from this client (", client,
                                  "): ", now, " in flight, the limit is ", max_per_client_,
                                  " (--max-streams-per-client); wait for some to finish and "
                                  "retry, or raise the limit")));
  }
  if (total_ >= max_total_) {
    if (mine == 0) clients_.erase(client);
    CountRejection(Limit::kStreams);
    return Admission(
        nullptr, client,
        grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat("too many concurrent calls to ecd: ", total_, " in flight, the limit is ",
                         max_total_, " (--max-streams); retry with backoff, or raise the limit")));
  }
  ++mine;
  ++total_;
  return Admission(this, client, grpc::Status::OK);
}

void RequestLimiter::Release(const std::string& client) {
  MutexLock lock(mu_);
  --total_;
  auto it = clients_.find(client);
  if (it != clients_.end() && --it->second == 0) clients_.erase(it);
}

uint32_t RequestLimiter::in_flight() const {
  MutexLock lock(mu_);
  return total_;
}

uint32_t RequestLimiter::in_flight(const std::string& client) const {
  MutexLock lock(mu_);
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second;
}

}  // namespace ecd::daemon
