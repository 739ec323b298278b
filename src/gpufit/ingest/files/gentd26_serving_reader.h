// Readers of the serving files of GenTD26 (Alibaba cluster-trace-v2026-GenAI, a Stable
// Diffusion service on Kubernetes; see ../shared/data/README.md):
//
//  * `qps.csv` (`timestamp_anon,value,container_ip,request_type`): requests per second per
//    container, about one sample a minute. The service's rate is the sum over containers
//    of the rows with one timestamp and request type (the data README's rule); the sample
//    interval is the most frequent gap between consecutive timestamps (57 s in the file).
//    A timestamp without rows of the type has no requests of it.
//  * `model_predict_data_anon.csv` (pure inference latency) and
//    `basemodel_update_latency_anon.csv` (base-model load time, the main part of a cold
//    start): column `value`, milliseconds, one sample per row.
//
// Columns are found by header name. Errors name the file, line and column: kNotFound
// (missing file), kInvalidArgument (missing column, malformed or negative number, no rows
// of the requested type; that error lists the types present).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/model_load.h"
#include "gpufit/model/request_trace.h"

namespace gpufit {

// The summed rate of `request_type` (e.g. "Generative Requests").
Result<RateSeries> ReadGenTd26Qps(const std::string& path, std::string_view request_type);

// The samples of a latency file, converted to seconds, in file order. Each value is in
// [0, 86,400,000] ms (one day: longer is a broken record; the file and line are named).
Result<std::vector<double>> ReadGenTd26LatencySeconds(const std::string& path);

// Each row of `basemodel_update_latency_anon.csv` as a load event of its pod (container_ip),
// at timestamp_anon (s), lasting value (ms, converted to seconds); in file order.
// Errors as above (value at most one day); a row without container_ip is an error naming its line.
Result<std::vector<ModelLoad>> ReadGenTd26ModelLoads(const std::string& path);

}  // namespace gpufit
