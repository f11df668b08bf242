// The bench's reading of a streamed completion: the bytes arrive in arbitrary fragments
// (sizes from the input), the SSE parser splits them into payloads, and each payload goes
// through the StreamAccumulator (JSON chunks, usage, errors, [DONE]) into a RequestRecord.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/request_record.h"
#include "bench/sse_parser.h"
#include "bench/stream_accumulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint::bench;
  FuzzedDataProvider input(data, size);
  RequestRecord record;
  record.start_s = 1.0;
  StreamAccumulator accumulator(record);
  SseParser parser;
  double time_s = 1.0;
  while (input.remaining_bytes() > 0) {
    const size_t fragment = input.ConsumeIntegralInRange<size_t>(1, 64);
    for (const std::string& payload : parser.feed(input.ConsumeBytesAsString(fragment))) {
      time_s += 0.001;
      if (!accumulator.on_payload(payload, time_s).is_ok()) return 0;
    }
  }
  (void)parser.pending();
  return 0;
}
