// Why a request stopped producing tokens, as the engine reports it and the server words it.
#pragma once

namespace crosspoint {

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };

// "stop", "length", "abort", "error"; nullptr for kNone.
const char* finish_reason_name(FinishReason reason);

}  // namespace crosspoint
