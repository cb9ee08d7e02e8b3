// Resolving devices' block records into a catalog's objects (docs/formats.md).
#include "lib/records/record_resolver.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace ecd::store {
namespace {

using Key = std::tuple<int64_t, uint64_t, uint32_t>;  // object, stripe, index

struct Located {
  BlockEntry entry;
  uint32_t device = 0;
};

// Which operations count: every one up to the mark unless voided; past it, only those whose
// every block record is there (their operation-end records say how many).
class Operations {
 public:
  explicit Operations(const std::vector<DeviceRecords>& devices) {
    for (const DeviceRecords& d : devices) {
      mark_ = std::max(mark_, d.committed_through);
      for (uint64_t a : d.records.aborted) aborted_.insert(a);
      for (const OperationEnd& e : d.records.ends) ends_[e.seq] = e.blocks;
      for (const BlockEntry& b : d.records.blocks) ++blocks_[b.seq];
      for (const ObjectHeader& h : d.records.objects) seen_.insert(h.seq);
    }
  }
  uint64_t mark() const { return mark_; }
  bool Counts(uint64_t seq) const {
    if (aborted_.count(seq) > 0) return false;
    if (seq <= mark_) return true;
    auto end = ends_.find(seq);
    if (end == ends_.end()) return false;
    auto seen = blocks_.find(seq);
    return (seen == blocks_.end() ? 0 : seen->second) == end->second;
  }
  uint64_t voided() const { return aborted_.size(); }
  uint64_t uncommitted() const {
    uint64_t n = 0;
    for (uint64_t seq : seen_) n += seq > mark_ && aborted_.count(seq) == 0 && !Counts(seq);
    return n;
  }

 private:
  uint64_t mark_ = 0;
  std::set<uint64_t> aborted_;
  std::map<uint64_t, uint64_t> ends_;
  std::map<uint64_t, uint64_t> blocks_;
  std::set<uint64_t> seen_;
};

uint64_t MaxSeq(const std::vector<DeviceRecords>& devices) {
  uint64_t max = 0;
  for (const DeviceRecords& d : devices) {
    max = std::max(max, d.committed_through);
    for (const ObjectHeader& h : d.records.objects) max = std::max(max, h.seq);
    for (const Tombstone& t : d.records.tombstones) max = std::max(max, t.seq);
    for (uint64_t a : d.records.aborted) max = std::max(max, a);
  }
  return max;
}

// Drops, on each device, the older of two records whose extents overlap: the newer one's
// operation wrote there after the older one's block was freed.
uint64_t DropOverlaps(std::map<Key, Located>& newest) {
  std::map<uint32_t, std::vector<std::pair<const Key*, const Located*>>> by_device;
  for (const auto& [key, at] : newest) by_device[at.device].emplace_back(&key, &at);
  std::set<Key> losers;
  for (auto& [device, list] : by_device) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.second->entry.lba < b.second->entry.lba;
    });
    for (size_t i = 1; i < list.size(); ++i) {
      const Located& prev = *list[i - 1].second;
      const Located& cur = *list[i].second;
      if (prev.entry.lba + prev.entry.lba_count <= cur.entry.lba) continue;
      const bool prev_loses = prev.entry.seq < cur.entry.seq;
      losers.insert(prev_loses ? *list[i - 1].first : *list[i].first);
      if (!prev_loses) list[i] = list[i - 1];  // The survivor stays the one to compare with.
    }
  }
  for (const Key& k : losers) newest.erase(k);
  return losers.size();
}

}  // namespace

Resolution Resolve(const std::vector<DeviceRecords>& devices) {
  Resolution r;
  const Operations ops(devices);
  r.committed_through = ops.mark();
  r.max_seq = MaxSeq(devices);
  r.voided = ops.voided();
  r.uncommitted = ops.uncommitted();

  std::map<int64_t, uint64_t> tombstones;
  std::map<int64_t, ObjectHeader> headers;
  for (const DeviceRecords& d : devices) {
    for (const Tombstone& t : d.records.tombstones) {
      if (ops.Counts(t.seq) || t.seq > ops.mark()) {
        tombstones[t.object_id] = std::max(tombstones[t.object_id], t.seq);
      }
    }
    for (const ObjectHeader& h : d.records.objects) {
      if (!ops.Counts(h.seq)) continue;
      auto [it, added] = headers.emplace(h.object.id, h);
      if (!added && it->second.seq < h.seq) it->second = h;
    }
  }
  for (auto it = headers.begin(); it != headers.end();) {
    auto t = tombstones.find(it->first);
    it = t != tombstones.end() && t->second >= it->second.seq ? headers.erase(it) : std::next(it);
  }
  r.deleted = tombstones.size();

  std::map<Key, Located> newest;
  for (const DeviceRecords& d : devices) {
    for (const BlockEntry& b : d.records.blocks) {
      auto h = headers.find(b.object_id);
      if (h == headers.end() || !ops.Counts(b.seq) || b.stripe >= h->second.object.stripe_count) {
        continue;
      }
      auto t = tombstones.find(b.object_id);
      if (t != tombstones.end() && b.seq < t->second) continue;
      const Key key{b.object_id, b.stripe, b.index};
      auto [it, added] = newest.emplace(key, Located{b, d.device});
      if (!added && it->second.entry.seq < b.seq) it->second = {b, d.device};
    }
  }
  r.superseded_extents = DropOverlaps(newest);

  // Newest first: of two objects with one name (a delete whose tombstones are gone), the later
  // one is the live one.
  std::map<std::string, int64_t> names;
  for (auto h = headers.rbegin(); h != headers.rend(); ++h) {
    const int64_t id = h->first;
    const ObjectHeader& header = h->second;
    ResolvedObject out;
    out.object = header.object;
    const uint32_t width = out.object.data_blocks + out.object.parity_blocks;
    std::string why;
    uint64_t missing = 0;
    for (uint64_t s = 0; s < out.object.stripe_count && why.empty(); ++s) {
      uint32_t present = 0;
      for (uint32_t i = 0; i < width; ++i) {
        BlockRecord b;
        b.stripe = s;
        b.index = i;
        auto it = newest.find(Key{id, s, i});
        if (it == newest.end()) {
          b.device = kNoDevice;
          b.corrupt = true;
          ++missing;
        } else {
          b.device = it->second.device;
          b.lba = it->second.entry.lba;
          b.lba_count = it->second.entry.lba_count;
          b.crc32c = it->second.entry.crc32c;
          ++present;
        }
        out.blocks.push_back(b);
      }
      if (present < out.object.data_blocks) {
        why = absl::StrCat("stripe ", s, " has records of ", present, " of its ", width,
                           " blocks, fewer than the ", out.object.data_blocks, " it needs");
      }
    }
    auto [named, fresh] = names.emplace(out.object.name, id);
    if (!fresh) why = absl::StrCat("the newer object ", named->second, " has the same name");
    if (!why.empty()) {
      r.not_restored.push_back(absl::StrCat("object ", id, " \"", out.object.name, "\": ", why));
      continue;
    }
    r.missing_blocks += missing;
    r.objects.push_back(std::move(out));
  }
  std::reverse(r.objects.begin(), r.objects.end());
  return r;
}

}  // namespace ecd::store
