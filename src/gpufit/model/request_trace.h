// Requests to an inference service, as a trace records them: arrival times, and for LLM
// services the prompt (input) and output token counts.
#pragma once

#include <string>
#include <vector>

namespace gpufit {

struct Request {
  double arrival_s = 0;   // seconds since the trace's first request
  int input_tokens = 0;   // prompt tokens (0 when the trace has none)
  int output_tokens = 0;  // generated tokens (0 when the trace has none)
};

struct RequestTrace {
  std::string source;
  std::vector<Request> requests;  // by arrival time
  bool has_tokens = false;
  double Duration() const { return requests.empty() ? 0 : requests.back().arrival_s; }
};

}  // namespace gpufit
