// HttpEndpoint: /metrics, /healthz and /readyz over cpp-httplib.
#include "daemon/http_server.h"

#include <httplib.h>

#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/metric_registry.h"

namespace ecd::daemon {

HttpEndpoint::HttpEndpoint() : server_(std::make_unique<httplib::Server>()) {}

HttpEndpoint::~HttpEndpoint() {
  if (server_->is_running()) server_->stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(
    const std::string& listen, std::function<std::string()> metrics) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", listen,
                     "\" is not host:port (e.g. 127.0.0.1:9400; port 0 picks one)"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:9400
  }
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint());
  httplib::Server& s = *e->server_;
  // Scrapes and probes are few and small: four threads; an idle keep-alive connection gives its
  // thread back after a second (a probe with a 1 s timeout is never starved); no request body
  // is wanted, so none over 4 KiB is read into memory.
  s.new_task_queue = [] { return new httplib::ThreadPool(4); };
  s.set_keep_alive_timeout(1);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.set_payload_max_length(4096);
  s.Get("/metrics",
        [metrics = std::move(metrics)](const httplib::Request&, httplib::Response& res) {
          res.set_content(metrics(), kTextContentType);
        });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  HttpEndpoint* self = e.get();
  s.Get("/readyz", [self](const httplib::Request&, httplib::Response& res) {
    if (!self->ready_.load()) {
      res.status = 503;
      res.set_content("not ready\n", "text/plain");
      return;
    }
    const std::string why_not = self->why_not_ ? self->why_not_() : "";
    res.status = why_not.empty() ? 200 : 503;
    res.set_content(why_not.empty() ? "ready\n" : absl::StrCat("not ready: ", why_not, "\n"),
                    "text/plain");
  });
  const int bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for metrics on ", listen,
                                               " (in use? pass --metrics-listen with another "
                                               "port, or \"\" to turn metrics off)"));
  }
  e->port_ = bound;
  e->thread_ = std::thread([self] {
    self->server_->listen_after_bind();
    self->listen_done_.store(true);
  });
  // stop() does nothing until the server runs: wait for that, so that a destructor right after
  // Start cannot leave the thread blocked in accept.
  while (!s.is_running() && !e->listen_done_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return e;
}

}  // namespace ecd::daemon
