// The demo's embedded cluster beyond its GPU telemetry (ingest/synthetic_telemetry.h): the
// training jobs and inference services that let `gpufit demo` run every strategy with no
// file and no network. Figures are made up for the demo and say so in their sources.
#pragma once

#include <cstdint>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/training/workload_file.h"

namespace gpufit::cli {

// Three training jobs on H100 nodes (one 2-pod gang with a deadline, one fine-tune, one job
// that cannot checkpoint), spot reclaims in the AWS Spot Advisor 5-10% band.
Result<TrainingWorkload> DemoTrainingJobs();

// Two services on a generated day of requests (image-gen first), Poisson arrivals whose rate follows the day
// (peak at 14:00, trough at 02:00 UTC; thinning of a homogeneous process, Lewis & Shedler
// 1979): `chat`, a llama-2-13b LLM on h100-80gb with a TTFT SLO (peak 1 request/s), and
// `image-gen`, a 5 s service (image generation), one request per replica at a time (peak
// 0.6 requests/s), with a latency SLO of 15 s. Deterministic for a seed.
Result<std::vector<PreparedService>> DemoServices(const GpuCatalog& catalog, std::uint64_t seed);

}  // namespace gpufit::cli
