// Reader of the GenTD26 LoRA request trace (Alibaba cluster-trace-v2026-GenAI,
// `lora_request_trace.csv`; ../shared/data/gentd26-lora/ holds its first 14 days): one row
// per Stable Diffusion request. Columns are found by header name (any order, others
// ignored):
//  * `gmt_create`: `YYYY-MM-DD HH:MM:SS` (UTC, one-second resolution): the arrival;
//  * `exec_time_seconds`: the request's execution time, seconds (finite, >= 0), taken as
//    its service time on one replica;
//  * `checkpoint_model_version_id`: the base model the request needs (e.g. `M0000`); empty
//    where the trace has none (9 of the 13,217 rows, pending requests), kept as "".
// Requests are sorted (stable) by arrival.
//
// Errors name the file, line and column: kNotFound (missing file), kInvalidArgument
// (missing column, malformed timestamp, empty or non-numeric execution time, NaN, infinite
// or negative, no requests).
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

struct LoggedRequest {
  double arrival_utc_s = 0;  // Unix seconds (UTC)
  double service_s = 0;      // execution time as logged
  std::string model;         // the base model it needs; "" when not logged
};

struct RequestLog {
  std::string source;
  std::vector<LoggedRequest> requests;  // by arrival
};

Result<RequestLog> ReadLoraRequestTrace(const std::string& path);

}  // namespace gpufit
