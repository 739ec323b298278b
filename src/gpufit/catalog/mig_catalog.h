// NVIDIA MIG (Multi-Instance GPU) profiles per GPU model: how many compute and memory
// slices each GPU instance takes, where it may start, how many fit, and its memory.
//
// The facts and their sources live in data/mig_profiles.yaml (embedded at build time):
// NVIDIA's MIG User Guide, mig-parted's default config and real nvidia-smi transcripts.
// Facts inferred rather than observed on that GPU are marked (placement_inferred,
// memory_derived). Start slots are on the memory-slice axis, as NVML's placement start.
// Memory is what `nvidia-smi mig -lgip` lists for the profile ("Memory GiB" x 1024, rounded
// down; the smallest where drivers differ), or, where no listing was found, derived so that
// it errs low: memory slices x the smallest observed MiB per slice among the GPU's profiles
// with fewer slices (data/mig_profiles.yaml cites each listing).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"

namespace gpufit {

struct MigProfile {
  std::string name;  // exactly as NVIDIA writes it: "1g.10gb", "1g.10gb+me", "3g.40gb"
  int compute_slices = 0;
  int memory_slices = 0;
  std::vector<int> starts;          // allowed first memory slice, ascending
  int max_count = 0;                // most instances of this profile on one GPU
  MiB memory{};                     // memory of the MIG instance (nvidia-smi mig -lgip)
  bool memory_derived = false;      // no -lgip listing seen for it: derived, errs low
  bool placement_inferred = false;  // starts not observed on this GPU model

  // "+me" (media extension): owns the GPU's media engines, so at most one per GPU.
  bool media_extension() const;
  // The extended resource a pod requests under the mixed strategy: "nvidia.com/mig-" and
  // the name with '+' written as '.' (NVIDIA k8s-device-plugin).
  std::string resource_name() const;
};

struct MigGpu {
  std::string id;  // catalog id, e.g. "h100-80gb"
  int compute_slices = 0;
  int memory_slices = 0;
  int max_instances = 0;
  std::vector<std::string> pci_device_ids;  // e.g. "0x233010DE", for mig-parted's device-filter
  std::vector<MigProfile> profiles;         // as listed in the data file (smallest first)

  // kInvalidArgument when `name` is not written like a MIG profile ("3g.40gb",
  // "1g.10gb+me"); kFailedPrecondition when this GPU model does not offer it.
  Result<const MigProfile*> Profile(std::string_view name) const;
};

class MigCatalog {
 public:
  // Parses the format of data/mig_profiles.yaml. Errors (kInvalidArgument) name `source`,
  // the GPU and the profile: among them a memory_source other than observed or derived, and
  // an observed memory_mib that is not its lgip_gib x 1024 rounded down.
  static Result<MigCatalog> Parse(std::string_view yaml_text, std::string_view source);
  static const MigCatalog& Embedded();

  // kNotFound naming the id and listing the MIG-capable ids.
  Result<const MigGpu*> Find(std::string_view id) const;
  const std::vector<MigGpu>& gpus() const { return gpus_; }

 private:
  std::vector<MigGpu> gpus_;
};

}  // namespace gpufit
