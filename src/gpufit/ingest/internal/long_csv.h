// The long CSV reader of ingest/files/telemetry_readers.h with its parallelism exposed, so that a
// test can read a small file in parts and compare with one reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube/pod_ends.h"
#include "gpufit/model/telemetry.h"

namespace gpufit::internal {

// ReadLongCsv reading the file in `parts` byte ranges on as many threads (csv_table.h's
// ForEachCsvRowInParts) once it has `min_bytes_to_split` bytes. The result is the same for
// every `parts`.
Result<Telemetry> ReadLongCsvInParts(const std::string& path, const PodEnds& ends, std::size_t parts,
                                     std::uintmax_t min_bytes_to_split);

}  // namespace gpufit::internal
