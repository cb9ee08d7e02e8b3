// Event log and mailbox return code names (mailbox.h), each from one (value, name) table that
// also defines which values are known.
#include <cstdint>
#include <iterator>
#include <string_view>

#include "lib/cxl/mailbox.h"
#include "lib/util/enum_table.h"

namespace ecd::cxl {
namespace {

constexpr EnumName<EventLog> kEventLogNames[] = {
    {EventLog::kInformational, "Informational"},
    {EventLog::kWarning, "Warning"},
    {EventLog::kFailure, "Failure"},
    {EventLog::kFatal, "Fatal"},
    {EventLog::kDynamicCapacity, "Dynamic Capacity"},
};
constexpr EnumTable kEventLogs(kEventLogNames, "Unknown");
static_assert(kEventLogs.Valid() && std::ssize(kEventLogNames) == kNumDefinedEventLogs);

// CXL r3.1 Table 8-34.
constexpr EnumName<ReturnCode> kReturnCodeNames[] = {
    {ReturnCode::kSuccess, "Success"},
    {ReturnCode::kBackgroundCommandStarted, "Background Command Started"},
    {ReturnCode::kInvalidInput, "Invalid Input"},
    {ReturnCode::kUnsupported, "Unsupported"},
    {ReturnCode::kInternalError, "Internal Error"},
    {ReturnCode::kRetryRequired, "Retry Required"},
    {ReturnCode::kBusy, "Busy"},
    {ReturnCode::kMediaDisabled, "Media Disabled"},
    {ReturnCode::kFwTransferInProgress, "FW Transfer in Progress"},
    {ReturnCode::kFwTransferOutOfOrder, "FW Transfer Out of Order"},
    {ReturnCode::kFwAuthenticationFailed, "FW Authentication Failed"},
    {ReturnCode::kInvalidSlot, "Invalid Slot"},
    {ReturnCode::kActivationFailedFwRolledBack, "Activation Failed, FW Rolled Back"},
    {ReturnCode::kActivationFailedColdResetRequired, "Activation Failed, Cold Reset Required"},
    {ReturnCode::kInvalidHandle, "Invalid Handle"},
    {ReturnCode::kInvalidPhysicalAddress, "Invalid Physical Address"},
    {ReturnCode::kInjectPoisonLimitReached, "Inject Poison Limit Reached"},
    {ReturnCode::kPermanentMediaFailure, "Permanent Media Failure"},
    {ReturnCode::kAborted, "Aborted"},
    {ReturnCode::kInvalidSecurityState, "Invalid Security State"},
    {ReturnCode::kIncorrectPassphrase, "Incorrect Passphrase"},
    {ReturnCode::kUnsupportedMailboxOrCci, "Unsupported Mailbox or CCI"},
    {ReturnCode::kInvalidPayloadLength, "Invalid Payload Length"},
    {ReturnCode::kInvalidLog, "Invalid Log"},
    {ReturnCode::kInterrupted, "Interrupted"},
    {ReturnCode::kUnsupportedFeatureVersion, "Unsupported Feature Version"},
    {ReturnCode::kUnsupportedFeatureSelectionValue, "Unsupported Feature Selection Value"},
    {ReturnCode::kFeatureTransferInProgress, "Feature Transfer in Progress"},
    {ReturnCode::kFeatureTransferOutOfOrder, "Feature Transfer Out of Order"},
    {ReturnCode::kResourcesExhausted, "Resources Exhausted"},
    {ReturnCode::kInvalidExtentList, "Invalid Extent List"},
    {ReturnCode::kTransferOutOfOrder, "Transfer Out of Order"},
    {ReturnCode::kRequestAbortNotSupported, "Request Abort Not Supported"},
};
constexpr EnumTable kReturnCodes(kReturnCodeNames, "Unknown");
static_assert(kReturnCodes.Valid());

}  // namespace

bool IsDefinedEventLog(uint8_t value) { return kEventLogs.IsKnown(static_cast<EventLog>(value)); }

std::string_view EventLogName(EventLog log) { return kEventLogs.Name(log); }

std::string_view ReturnCodeName(ReturnCode rc) { return kReturnCodes.Name(rc); }

}  // namespace ecd::cxl
