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
  double origin_s = 0;  // the file's time of the first request (Unix seconds where the file has dates)
  double Duration() const { return requests.empty() ? 0 : requests.back().arrival_s; }
};

// A service's request rate as monitoring samples it: rate per_s[i] (requests/s) holds from
// t_s[i] for sample_s seconds or until the next sample, whichever is first; no sample
// means no requests. Times are seconds since the first sample.
struct RateSeries {
  std::string source;
  std::vector<double> t_s;
  std::vector<double> per_s;
  double sample_s = 60;
  double origin_s = 0;  // the file's time of the first sample
};

}  // namespace gpufit
