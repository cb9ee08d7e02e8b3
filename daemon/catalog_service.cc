// The Catalog service: backup to a file beside the catalog, then streamed and removed.
#include "daemon/catalog_service.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "daemon/convert.h"
#include "lib/store/store_admin.h"

namespace ecd::daemon {

grpc::Status CatalogService::Backup(grpc::ServerContext* context,
                                    const v1::CatalogBackupRequest* request,
                                    grpc::ServerWriter<v1::CatalogBackupChunk>* writer) {
  return gate_.Run(context, "Backup", [&]() -> grpc::Status {
    const std::string path = (std::filesystem::path(data_dir_) /
                              absl::StrCat("catalog.backup-", ::getpid(), "-", next_++, ".tmp"))
                                 .string();
    std::error_code ec;
    std::filesystem::remove(path, ec);
    absl::Cleanup remove = [&path] {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    };
    if (absl::Status s = store_->admin().BackupCatalog(path); !s.ok()) return ToGrpc(s);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          absl::StrCat("cannot read the backup ", path, " back"));
    }
    v1::CatalogBackupChunk chunk;
    std::string buffer(1 << 20, '\0');
    uint64_t size = 0;
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const std::streamsize n = in.gcount();
      if (n <= 0) break;
      chunk.set_data(buffer.data(), static_cast<size_t>(n));
      size += static_cast<uint64_t>(n);
      if (context->IsCancelled() || !writer->Write(chunk)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
    }
    chunk.Clear();
    chunk.set_done(true);
    chunk.set_size_bytes(size);
    writer->Write(chunk);
    return grpc::Status::OK;
  });
}

}  // namespace ecd::daemon
