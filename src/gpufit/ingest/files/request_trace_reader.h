// Readers of inference request traces.
//
//  * Azure LLM inference trace 2023 (AzurePublicDataset, the Splitwise paper's trace): CSV
//    `TIMESTAMP,ContextTokens,GeneratedTokens`, TIMESTAMP `YYYY-MM-DD HH:MM:SS.fffffff`
//    (UTC, 7 fractional digits; fewer are accepted).
//  * Generic: CSV `timestamp_s[,input_tokens,output_tokens]`, seconds (any origin).
// Arrivals are shifted so the first request is at 0 and sorted (stable) by time.
//
// Errors name the file, line and column: kNotFound (missing file), kInvalidArgument
// (missing column, malformed timestamp or number, negative value, no requests).
#pragma once

#include <string>

#include "gpufit/core/result.h"
#include "gpufit/model/request_trace.h"

namespace gpufit {

Result<RequestTrace> ReadAzureLlmTrace(const std::string& path);
Result<RequestTrace> ReadGenericRequestTrace(const std::string& path);

// Seconds since 1970-01-01 00:00:00 of `YYYY-MM-DD HH:MM:SS[.f...]`; none when malformed.
Result<double> ParseUtcTimestamp(std::string_view text);

}  // namespace gpufit
