// The Catalog service: an online backup of the catalog, streamed to the client.
#ifndef ECD_DAEMON_CATALOG_SERVICE_H_
#define ECD_DAEMON_CATALOG_SERVICE_H_

#include <atomic>
#include <string>

#include "daemon/auth.h"
#include "daemon/call_gate.h"
#include "daemon/request_limiter.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/store/store.h"

namespace ecd::daemon {

class CatalogService final : public v1::Catalog::Service {
 public:
  // The store must outlive the service; every call passes `rules`. The backup is made in
  // `data_dir` first, then streamed and removed.
  CatalogService(store::Store* store, std::string data_dir, const CallRules& rules)
      : store_(store),
        data_dir_(std::move(data_dir)),
        gate_(v1::Catalog::service_full_name(), rules) {}

  grpc::Status Backup(grpc::ServerContext* context, const v1::CatalogBackupRequest* request,
                      grpc::ServerWriter<v1::CatalogBackupChunk>* writer) override;

 private:
  store::Store* const store_;
  const std::string data_dir_;
  const CallGate gate_;  // Authorizes and admits every call.
  std::atomic<uint64_t> next_{0};
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CATALOG_SERVICE_H_
