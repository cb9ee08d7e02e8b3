// Fuzzes the emulated CXL device's event logs (lib/cxl/event_log.h): a sequence of record inserts
// and mailbox commands (Get/Clear Event Records, Get/Set Event Interrupt Policy, and any other
// opcode) with fuzzed payloads, run against EventLogDevice and against a small reference model
// written from the rules in event_log.h's header comment.
//
// Input: device options (four log capacities 1..8, the payload size 256..2048, the power-on
// interrupt policy), then operations until the input ends: insert a record into a log (any log
// byte), run a well-formed command built from the model's state (possibly with a wrong handle),
// run a raw opcode with raw payload bytes, or check the Event Status register.
//
// Properties checked beyond "no crash" (and no deadlock: the interrupt handler calls back into
// the device):
// - Execute always answers with a return code and an output only on Success; opcodes outside
//   0100h..0103h are Unsupported and oversized inputs are Invalid Payload Length;
// - every response is the model's, byte for byte: Get Event Records returns the oldest records
//   that fit, with More Records and the overflow fields as documented; Clear succeeds exactly for
//   the oldest handles in order (Clear All only on an overflowed log); the interrupt policy reads
//   back as set;
// - inserts assign the documented handles (never 0, never one still in the log), write the
//   handle and (when zero) the timestamp into the image and change no other byte, account
//   overflows with saturating counts and both timestamps, and raise the interrupt exactly when
//   the log's mode is MSI/MSI-X or FW Interrupt;
// - EventStatus and RecordCount match the model after every operation.
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "lib/cxl/event_log.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::cxl {
namespace {

uint16_t HandleOf(const RawEventRecord& r) { return static_cast<uint16_t>(r[0x14] | r[0x15] << 8); }

struct ModelLog {
  std::deque<RawEventRecord> records;
  uint16_t next_handle = 1;
  uint16_t overflow_count = 0;
  uint64_t first_ts = 0;
  uint64_t last_ts = 0;
  InterruptSetting irq;

  bool Live(uint16_t h) const {
    for (const RawEventRecord& r : records) {
      if (HandleOf(r) == h) return true;
    }
    return false;
  }
};

struct Model {
  std::array<uint32_t, kNumDeviceEventLogs> capacity{};
  size_t max_per_get = 0;
  std::array<ModelLog, kNumDeviceEventLogs> logs;

  uint64_t EventStatus() const {
    uint64_t s = 0;
    for (int i = 0; i < kNumDeviceEventLogs; ++i) {
      if (!logs[i].records.empty()) s |= uint64_t{1} << i;
    }
    return s;
  }
};

MailboxResponse Expect(ReturnCode rc) { return MailboxResponse{rc, {}}; }

// What the device must answer to `opcode` with `input`, applying the command to the model.
MailboxResponse ModelExecute(Model& m, uint32_t payload_size, uint16_t opcode,
                             const std::vector<uint8_t>& input) {
  if (opcode < kOpGetEventRecords || opcode > kOpSetEventInterruptPolicy) {
    return Expect(ReturnCode::kUnsupported);
  }
  if (input.size() > payload_size) return Expect(ReturnCode::kInvalidPayloadLength);
  switch (opcode) {
    case kOpGetEventRecords: {
      absl::StatusOr<GetEventRecordsInput> in = GetEventRecordsInput::Decode(input);
      if (!in.ok()) return Expect(ReturnCodeForDecodeError(in.status()));
      if (static_cast<int>(in->log) >= kNumDeviceEventLogs)
        return Expect(ReturnCode::kInvalidInput);
      const ModelLog& l = m.logs[static_cast<int>(in->log)];
      GetEventRecordsOutput out;
      const size_t n = std::min(l.records.size(), m.max_per_get);
      out.records.assign(l.records.begin(), l.records.begin() + static_cast<ptrdiff_t>(n));
      out.more_records = l.records.size() > n;
      out.overflow = l.overflow_count != 0;
      out.overflow_count = l.overflow_count;
      out.first_overflow_ts = l.first_ts;
      out.last_overflow_ts = l.last_ts;
      return MailboxResponse{ReturnCode::kSuccess, out.Encode()};
    }
    case kOpClearEventRecords: {
      absl::StatusOr<ClearEventRecordsInput> in = ClearEventRecordsInput::Decode(input);
      if (!in.ok()) return Expect(ReturnCodeForDecodeError(in.status()));
      if (static_cast<int>(in->log) >= kNumDeviceEventLogs)
        return Expect(ReturnCode::kInvalidInput);
      ModelLog& l = m.logs[static_cast<int>(in->log)];
      if (in->clear_all) {
        if (l.overflow_count == 0 || !in->handles.empty()) return Expect(ReturnCode::kInvalidInput);
        l.records.clear();
      } else {
        if (in->handles.size() > l.records.size()) return Expect(ReturnCode::kInvalidHandle);
        for (size_t i = 0; i < in->handles.size(); ++i) {
          if (in->handles[i] != HandleOf(l.records[i])) return Expect(ReturnCode::kInvalidHandle);
        }
        if (in->handles.empty()) return Expect(ReturnCode::kSuccess);
        l.records.erase(l.records.begin(),
                        l.records.begin() + static_cast<ptrdiff_t>(in->handles.size()));
      }
      l.overflow_count = 0;
      l.first_ts = l.last_ts = 0;
      return Expect(ReturnCode::kSuccess);
    }
    case kOpGetEventInterruptPolicy: {
      if (!input.empty()) return Expect(ReturnCode::kInvalidPayloadLength);
      EventInterruptPolicy p;
      for (int i = 0; i < kNumDeviceEventLogs; ++i) p.logs[i] = m.logs[i].irq;
      return MailboxResponse{ReturnCode::kSuccess, p.Encode()};
    }
    default: {
      absl::StatusOr<EventInterruptPolicy> p = EventInterruptPolicy::Decode(input);
      if (!p.ok()) return Expect(ReturnCodeForDecodeError(p.status()));
      for (int i = 0; i < kNumDeviceEventLogs; ++i) m.logs[i].irq = p->logs[i];
      return Expect(ReturnCode::kSuccess);
    }
  }
}

// A command built from the model's state, so that successful paths are reached often.
std::vector<uint8_t> WellFormed(fuzz::Reader& in, const Model& m, uint16_t* opcode) {
  const uint8_t kind = in.U8();
  const auto log = static_cast<EventLog>(in.U8() % 5);
  switch (kind % 4) {
    case 0:
      *opcode = kOpGetEventRecords;
      return GetEventRecordsInput{log}.Encode();
    case 1: {
      *opcode = kOpClearEventRecords;
      ClearEventRecordsInput c;
      c.log = log;
      c.clear_all = (kind & 0x10) != 0;
      const size_t n = in.U8() % 8;
      if (static_cast<int>(log) < kNumDeviceEventLogs) {
        const auto& recs = m.logs[static_cast<int>(log)].records;
        for (size_t i = 0; i < n && i < recs.size(); ++i) c.handles.push_back(HandleOf(recs[i]));
      }
      if ((kind & 0x20) != 0 && !c.handles.empty()) c.handles[in.U8() % c.handles.size()] ^= 1;
      if ((kind & 0x40) != 0) c.handles.push_back(in.U16());
      return c.Encode();
    }
    case 2:
      *opcode = kOpGetEventInterruptPolicy;
      return {};
    default: {
      *opcode = kOpSetEventInterruptPolicy;
      EventInterruptPolicy p;
      for (auto& s : p.logs) {
        const uint8_t b = in.U8();
        s.mode = static_cast<InterruptMode>(b % 3);
        s.message_number = b >> 4;
      }
      if ((kind & 0x10) != 0) p.dynamic_capacity = InterruptSetting{InterruptMode::kMsi, 1};
      return p.Encode();
    }
  }
}

}  // namespace
}  // namespace ecd::cxl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::cxl;
  ecd::fuzz::Reader in(data, size);
  EventLogDeviceOptions o;
  Model m;
  for (int i = 0; i < kNumDeviceEventLogs; ++i) o.capacity[i] = m.capacity[i] = 1 + in.U8() % 8;
  o.payload_size = 256u << (in.U8() % 4);
  m.max_per_get = (o.payload_size - GetEventRecordsOutput::kHeaderSize) / kEventRecordSize;
  for (int i = 0; i < kNumDeviceEventLogs; ++i) {
    const uint8_t b = in.U8();
    o.initial_policy[i] =
        m.logs[i].irq = {static_cast<InterruptMode>(b % 3), static_cast<uint8_t>(b >> 4)};
  }
  uint64_t clock = 1000;
  o.clock = [&clock] { return ++clock; };
  absl::StatusOr<std::unique_ptr<EventLogDevice>> created = EventLogDevice::Create(o);
  FUZZ_CHECK(created.ok());
  EventLogDevice& dev = **created;
  int interrupts = 0;
  dev.SetInterruptHandler([&](EventLog) {
    ++interrupts;
    (void)dev.EventStatus();  // the handler may call back into the device
  });

  for (int ops = 0; !in.empty() && ops < 256; ++ops) {
    const uint8_t op = in.U8();
    switch (op % 4) {
      case 0: {  // insert
        const uint8_t log_byte = in.U8();
        RawEventRecord rec{};
        const std::vector<uint8_t> head = in.Bytes(in.U8() % (kEventRecordSize + 1));
        std::copy(head.begin(), head.end(), rec.begin());
        const int before = interrupts;
        absl::StatusOr<InsertResult> r = dev.InsertRecord(static_cast<EventLog>(log_byte), rec);
        if (log_byte >= kNumDeviceEventLogs) {
          FUZZ_CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
          FUZZ_CHECK(interrupts == before);
          break;
        }
        FUZZ_CHECK(r.ok());
        ModelLog& l = m.logs[log_byte];
        const uint64_t now = clock;
        const bool raises =
            l.irq.mode == InterruptMode::kMsi || l.irq.mode == InterruptMode::kFwInterrupt;
        FUZZ_CHECK(r->interrupt_raised == raises);
        FUZZ_CHECK(interrupts == before + (raises ? 1 : 0));
        if (l.records.size() >= m.capacity[log_byte]) {
          FUZZ_CHECK(!r->stored && r->handle == 0);
          if (l.overflow_count == 0) l.first_ts = now;
          l.last_ts = now;
          if (l.overflow_count < 0xFFFF) ++l.overflow_count;
          break;
        }
        uint16_t h = l.next_handle;
        while (h == 0 || l.Live(h)) h = static_cast<uint16_t>(h + 1);
        l.next_handle = static_cast<uint16_t>(h == 0xFFFF ? 1 : h + 1);
        FUZZ_CHECK(r->stored && r->handle == h);
        RawEventRecord stored = rec;
        stored[0x14] = static_cast<uint8_t>(h);
        stored[0x15] = static_cast<uint8_t>(h >> 8);
        bool zero_ts = true;
        for (int i = 0; i < 8; ++i) zero_ts &= stored[0x18 + i] == 0;
        if (zero_ts) {
          for (int i = 0; i < 8; ++i) stored[0x18 + i] = static_cast<uint8_t>(now >> (8 * i));
        }
        l.records.push_back(stored);
        break;
      }
      case 1:
      case 2: {  // a command, well formed from the model's state or raw
        uint16_t opcode = 0;
        std::vector<uint8_t> payload;
        if (op % 4 == 1) {
          payload = WellFormed(in, m, &opcode);
        } else {
          opcode = (op & 0x80) != 0 ? in.U16() : static_cast<uint16_t>(0x0100 + (op >> 2) % 4);
          payload = in.ShortBytes();
          if ((op & 0x40) != 0) payload.resize(payload.size() + o.payload_size - 8, 0);
        }
        const MailboxResponse want = ModelExecute(m, o.payload_size, opcode, payload);
        const MailboxResponse got = dev.Execute(opcode, payload);
        FUZZ_CHECK(got.rc == want.rc);
        FUZZ_CHECK(got.output == want.output);
        FUZZ_CHECK(got.rc == ReturnCode::kSuccess || got.output.empty());
        FUZZ_CHECK(ReturnCodeName(got.rc) != "Unknown");
        break;
      }
      default:
        break;
    }
    FUZZ_CHECK(dev.EventStatus() == m.EventStatus());
    for (int i = 0; i < kNumDeviceEventLogs; ++i) {
      FUZZ_CHECK(dev.RecordCount(static_cast<EventLog>(i)) == m.logs[i].records.size());
    }
    FUZZ_CHECK(dev.RecordCount(EventLog::kDynamicCapacity) == 0);
  }
  return 0;
}
