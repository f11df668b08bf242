#include "scheduler/sequence.h"

namespace crosspoint {

const char* sequence_state_name(SequenceState state) {
  switch (state) {
    case SequenceState::kWaiting: return "waiting";
    case SequenceState::kRunning: return "running";
    case SequenceState::kFinished: return "finished";
  }
  return "unknown";
}

}  // namespace crosspoint
