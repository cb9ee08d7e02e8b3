// Conversions between lib/store types and ecd.v1 messages.
#include "daemon/convert.h"

#include <algorithm>
#include <string>

namespace ecd::daemon {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

v1::MatrixType ToProto(ec::MatrixType type) {
  return type == ec::MatrixType::kVandermonde ? v1::MATRIX_TYPE_VANDERMONDE
                                              : v1::MATRIX_TYPE_CAUCHY;
}

ec::MatrixType FromProto(v1::MatrixType type) {
  return type == v1::MATRIX_TYPE_VANDERMONDE ? ec::MatrixType::kVandermonde
                                             : ec::MatrixType::kCauchy;
}

v1::DeviceState ToProto(store::DeviceState state) {
  switch (state) {
    case store::DeviceState::kOnline:
      return v1::DEVICE_STATE_ONLINE;
    case store::DeviceState::kFailing:
      return v1::DEVICE_STATE_FAILING;
    case store::DeviceState::kFailed:
      return v1::DEVICE_STATE_FAILED;
    case store::DeviceState::kDown:
      return v1::DEVICE_STATE_DOWN;
  }
  return v1::DEVICE_STATE_UNSPECIFIED;
}

std::optional<store::DeviceState> FromProto(v1::DeviceState state) {
  switch (state) {
    case v1::DEVICE_STATE_ONLINE:
      return store::DeviceState::kOnline;
    case v1::DEVICE_STATE_FAILING:
      return store::DeviceState::kFailing;
    case v1::DEVICE_STATE_FAILED:
      return store::DeviceState::kFailed;
    case v1::DEVICE_STATE_DOWN:
      return store::DeviceState::kDown;
    default:
      return std::nullopt;
  }
}

void ToProto(const store::ObjectRecord& o, v1::ObjectInfo* out) {
  out->set_name(o.name);
  out->set_size(o.size);
  out->set_data_blocks(o.data_blocks);
  out->set_parity_blocks(o.parity_blocks);
  out->set_matrix(ToProto(o.matrix));
  out->set_block_size(o.block_size);
  out->set_stripe_count(o.stripe_count);
  out->set_created_unix_ms(o.created_unix_ms);
  out->set_version(o.version);
  out->set_id(static_cast<uint64_t>(o.id));
}

void ToProto(const store::ObjectStatus& s, bool with_stripes, v1::ObjectInfo* out) {
  ToProto(s.object, out);
  out->set_degraded_stripes(s.degraded_stripes);
  out->set_lost_stripes(s.lost_stripes);
  if (!with_stripes) return;
  for (const store::StripeStatus& stripe : s.stripes) {
    v1::StripeInfo* si = out->add_stripes();
    si->set_index(stripe.index);
    si->set_healthy_blocks(stripe.healthy_blocks);
    for (const store::BlockStatus& b : stripe.blocks) {
      v1::BlockInfo* bi = si->add_blocks();
      bi->set_index(b.record.index);
      bi->set_device(b.record.device);
      bi->set_lba(b.record.lba);
      bi->set_lba_count(b.record.lba_count);
      bi->set_crc32c(b.record.crc32c);
      bi->set_healthy(b.healthy);
    }
  }
}

void ToProto(const store::DeviceStatus& d, v1::DeviceInfo* out) {
  out->set_id(d.record.id);
  out->set_path(d.record.path);
  out->set_state(ToProto(d.record.state));
  out->set_size_bytes(d.record.size_bytes);
  out->set_used_bytes(d.used_bytes);
  out->set_free_bytes(d.free_bytes);
  out->set_metadata_bytes(d.metadata_bytes);
  out->set_lba_size(d.record.lba_size);
  out->set_blocks(d.blocks);
  for (const auto& [name, value] : d.counters) (*out->mutable_counters())[name] = value;
  if (d.record.state == store::DeviceState::kDown) {
    out->set_down_since_unix_ms(d.record.down_since_unix_ms);
    out->set_down_reason(d.record.down_reason);
  }
}

void ToProto(const store::FileSystemUsage& fs, v1::FileSystemInfo* out) {
  out->set_path(fs.path);
  out->set_size_bytes(fs.size_bytes);
  out->set_free_bytes(fs.free_bytes);
  out->set_reserve_bytes(fs.reserve_bytes);
  out->set_claimed_bytes(fs.claimed_bytes);
  out->set_catalog(fs.catalog);
  for (uint32_t d : fs.devices) out->add_devices(d);
}

void ToProto(const store::RecoverProgress& p, v1::RecoverProgress* out) {
  out->set_stripes_total(p.stripes_total);
  out->set_stripes_done(p.stripes_done);
  out->set_blocks_checked(p.blocks_checked);
  out->set_blocks_rebuilt(p.blocks_rebuilt);
  out->set_bytes_rebuilt(p.bytes_rebuilt);
}

void ToProto(const store::RecoverProgress& p, v1::ScrubFindings* out) {
  out->set_stripes_checked(p.stripes_done);
  out->set_blocks_checked(p.blocks_checked);
  out->set_bytes_checked(p.bytes_checked);
  out->set_blocks_unreadable(p.blocks_unreadable);
  out->set_blocks_corrupt(p.blocks_corrupt);
  out->set_parity_mismatches(p.parity_mismatches);
  out->set_lost_stripes(p.lost_stripes);
  out->set_blocks_repaired(p.blocks_rebuilt);
  out->set_bytes_repaired(p.bytes_rebuilt);
}

void ToProto(const repair::ScrubReport& r, v1::ScrubProgress* out) {
  out->set_objects_total(r.objects_total);
  out->set_objects_done(r.objects_done);
  out->set_current(r.current);
  ToProto(r.found, out->mutable_found());
  out->set_objects_failed(r.objects_failed);
  for (const std::string& e : r.errors) out->add_errors(e);
}

void ToProto(const repair::ScrubberStatus& s, const repair::ScrubberOptions& options,
             v1::ScrubStatusResponse* out) {
  auto unix_ms = [](absl::Time t) {
    return t == absl::InfinitePast() || t == absl::InfiniteFuture() ? 0 : absl::ToUnixMillis(t);
  };
  out->set_background(s.background);
  out->set_running(s.running);
  out->set_last_finished_unix_ms(unix_ms(s.last_finished));
  out->set_next_start_unix_ms(s.background ? unix_ms(s.next_start) : 0);
  out->set_interval_seconds(static_cast<uint64_t>(absl::ToInt64Seconds(options.interval)));
  out->set_rate_bytes_per_sec(options.rate_bytes_per_sec);
  if (s.running) ToProto(s.current, out->mutable_current());
  ToProto(s.last, out->mutable_last());
  out->set_passes(s.passes);
  ToProto(s.found_total, out->mutable_found_total());
  out->set_objects_scrubbed_total(s.objects_scrubbed_total);
  out->set_objects_failed_total(s.objects_failed_total);
}

void ToProto(const repair::RepairStatus& s, v1::RepairStatus* out) {
  out->set_paused(s.paused);
  out->set_rate_bytes_per_sec(s.rate_bytes_per_sec);
  out->set_delay_seconds(
      static_cast<uint64_t>(std::max<int64_t>(absl::ToInt64Seconds(s.delay), 0)));
  out->set_stripes_queued(s.stripes_queued);
  out->set_stripes_waiting(s.stripes_waiting);
  out->set_stripes_repaired(s.stripes_repaired);
  out->set_blocks_repaired(s.blocks_repaired);
  out->set_bytes_repaired(s.bytes_repaired);
  out->set_stripes_lost(s.stripes_lost);
  for (uint64_t n : s.stripes_by_redundancy) out->add_stripes_by_redundancy(n);
  for (const auto& [left, level] : s.repaired_by_redundancy) {
    v1::RepairLevel* l = out->add_repaired_by_redundancy();
    l->set_redundancy_left(left);
    l->set_first_batch(level.first_batch);
    l->set_last_batch(level.last_batch);
    l->set_stripes(level.stripes);
  }
  out->set_bytes_per_sec(s.bytes_per_sec);
  // Rounded up: "0 s left" only once nothing is.
  out->set_eta_seconds(s.eta ? absl::ToInt64Seconds(absl::Ceil(*s.eta, absl::Seconds(1))) : -1);
  out->set_stalled(s.stalled);
  out->set_last_progress_unix_ms(
      s.last_progress == absl::InfinitePast() ? 0 : absl::ToUnixMillis(s.last_progress));
}

}  // namespace ecd::daemon
