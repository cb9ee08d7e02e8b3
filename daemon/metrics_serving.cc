// DaemonMetrics::AttachLimiter and AttachServing: the request limiter's and the gRPC
// listener's scrape-time families, from one reading of each per scrape.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "daemon/metrics.h"
#include "daemon/tcp_acceptor.h"

namespace ecd::daemon {
namespace {

using prometheus::MetricType;

// What a scrape reads from the request limiter.
struct LimiterData {
  uint32_t in_flight = 0;
  std::array<uint64_t, kLimitCount> rejections{};  // by Limit
};

// What a scrape reads from the listener and the stream idle timer.
struct ServingData {
  bool accepting = false;
  uint64_t rebuilds = 0;
  TcpAcceptor::Stats acceptor;  // zeros without an acceptor (TLS)
  uint64_t idle_cancels = 0;
};

std::vector<ScrapedFamily<ServingData>> ServingFamilies(bool with_acceptor) {
  using D = ServingData;
  using metrics_internal::OneValue;
  std::vector<ScrapedFamily<D>> out = {
      OneValue<D>("ecd_listener_accepting",
                  "1 while new gRPC connections are accepted and served; 0 while they cannot be "
                  "(at --max-connections, out of file descriptors, the server restarting, "
                  "stopping): /readyz says why.",
                  MetricType::Gauge, [](const D& d) { return d.accepting ? 1 : 0; }),
      {{"ecd_listener_recoveries_total",
        "Times ecd made its gRPC listener accept again: accept, its own accept loop after "
        "running out of file descriptors; rebuild, the gRPC server restarted after a listener "
        "gRPC runs stopped.",
        MetricType::Counter,
        {"how"}},
       [](const D& d) {
         return Samples{{{"accept"}, static_cast<double>(d.acceptor.recoveries)},
                        {{"rebuild"}, static_cast<double>(d.rebuilds)}};
       }},
  };
  if (with_acceptor) {
    out.push_back(OneValue<D>("ecd_grpc_connections",
                              "gRPC TCP connections open (what --max-connections bounds).",
                              MetricType::Gauge, [](const D& d) { return d.acceptor.open; }));
    out.push_back(
        {{"ecd_grpc_connections_refused_total",
          "gRPC TCP connections closed as soon as accepted: max-connections, that many were "
          "open; descriptors, ecd was out of file descriptors.",
          MetricType::Counter,
          {"reason"}},
         [](const D& d) {
           return Samples{{{"max-connections"}, static_cast<double>(d.acceptor.refused_at_limit)},
                          {{"descriptors"}, static_cast<double>(d.acceptor.refused_descriptors)}};
         }});
  }
  out.push_back(OneValue<D>(
      "ecd_stream_idle_cancels_total",
      "Calls ecd cancelled because their client sent or took nothing for --stream-idle-timeout.",
      MetricType::Counter, [](const D& d) { return d.idle_cancels; }));
  return out;
}

}  // namespace

void DaemonMetrics::AttachLimiter(const RequestLimiter* limiter) {
  using D = LimiterData;
  registry_.AddScraped<D>(
      [limiter] {
        D d;
        d.in_flight = limiter->in_flight();
        for (int i = 0; i < kLimitCount; ++i) d.rejections[i] = limiter->rejections(Limit(i));
        return d;
      },
      {metrics_internal::OneValue<D>("ecd_inflight_requests",
                                     "ecd.v1 calls in progress (what --max-streams bounds).",
                                     MetricType::Gauge, [](const D& d) { return d.in_flight; }),
       {{"ecd_limit_rejections_total",
         "Calls refused by an input limit, by limit (the --max-* flag without its dashes).",
         MetricType::Counter,
         {"limit"}},
        [](const D& d) {
          Samples out;
          for (int i = 0; i < kLimitCount; ++i) {
            out.push_back(
                {{LimitName(static_cast<Limit>(i))}, static_cast<double>(d.rejections[i])});
          }
          return out;
        }}});
}

void DaemonMetrics::AttachServing(const GrpcServing* serving, const StreamIdleTimer* idle) {
  const TcpAcceptor* acceptor = serving->acceptor();
  registry_.AddScraped<ServingData>(
      [serving, acceptor, idle] {
        ServingData d;
        d.accepting = serving->NotReadyReason().empty();
        d.rebuilds = serving->rebuilds();
        if (acceptor != nullptr) d.acceptor = acceptor->stats();
        d.idle_cancels = idle->cancelled_calls();
        return d;
      },
      ServingFamilies(acceptor != nullptr));
}

}  // namespace ecd::daemon
