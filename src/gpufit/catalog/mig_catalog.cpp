#include "gpufit/catalog/mig_catalog.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpufit/catalog/embedded_mig_profiles.h"
#include "gpufit/core/text.h"

namespace gpufit {

bool MigProfile::media_extension() const { return name.ends_with("+me"); }

std::string MigProfile::resource_name() const {
  std::string r = "nvidia.com/mig-" + name;
  std::replace(r.begin(), r.end(), '+', '.');
  return r;
}

namespace {
// NVIDIA's form: <digits>g.<digits>gb, optionally followed by +me.
bool LooksLikeProfile(std::string_view n) {
  auto digits = [&](std::size_t& i) {
    const std::size_t from = i;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9') ++i;
    return i > from;
  };
  std::size_t i = 0;
  if (!digits(i) || n.substr(i, 2) != "g.") return false;
  i += 2;
  if (!digits(i) || n.substr(i, 2) != "gb") return false;
  i += 2;
  return i == n.size() || n.substr(i) == "+me";
}
}  // namespace

Result<const MigProfile*> MigGpu::Profile(std::string_view name) const {
  if (!LooksLikeProfile(name))
    return InvalidArgument("{} is not a MIG profile name (NVIDIA writes them like 3g.40gb or 1g.10gb+me)",
                           QuoteForMessage(name));
  for (const MigProfile& p : profiles) {
    if (p.name == name) return &p;
  }
  std::vector<std::string> offered;
  for (const MigProfile& p : profiles) offered.push_back(p.name);
  return FailedPrecondition("{} does not offer MIG profile '{}' (it offers {})", id, name, fmt::join(offered, ", "));
}

namespace {

Result<int> Int(const YAML::Node& n, const char* key, std::string_view where, int lo, int hi) {
  const YAML::Node v = n[key];
  if (!v || !v.IsScalar()) return InvalidArgument("{}: missing '{}'", where, key);
  int x = 0;
  try {
    x = v.as<int>();
  } catch (const YAML::Exception&) {
    return InvalidArgument("{}: '{}' must be a whole number", where, key);
  }
  if (x < lo || x > hi) return InvalidArgument("{}: '{}' must be in [{}, {}], got {}", where, key, lo, hi, x);
  return x;
}

Result<MigProfile> ParseProfile(const YAML::Node& n, const MigGpu& gpu, std::string_view source) {
  MigProfile p;
  if (!n["name"] || !n["name"].IsScalar()) return InvalidArgument("{}: {}: a profile without a name", source, gpu.id);
  p.name = n["name"].as<std::string>();
  const std::string where = fmt::format("{}: {} {}", source, gpu.id, p.name);
  Result<int> c = Int(n, "compute_slices", where, 1, gpu.compute_slices);
  if (!c) return c.error();
  Result<int> m = Int(n, "memory_slices", where, 1, gpu.memory_slices);
  if (!m) return m.error();
  Result<int> k = Int(n, "max_count", where, 1, gpu.max_instances);
  if (!k) return k.error();
  Result<int> mib = Int(n, "memory_mib", where, 1, 1 << 30);
  if (!mib) return mib.error();
  p.compute_slices = *c;
  p.memory_slices = *m;
  p.max_count = *k;
  p.memory = MiB{*mib};
  if (!n["starts"] || !n["starts"].IsSequence() || n["starts"].size() == 0)
    return InvalidArgument("{}: 'starts' must be a non-empty list", where);
  for (const YAML::Node& s : n["starts"]) {
    const int start = s.as<int>();
    if (start < 0 || start + p.memory_slices > gpu.memory_slices)
      return InvalidArgument("{}: start {} puts the instance past memory slice {}", where, start, gpu.memory_slices);
    p.starts.push_back(start);
  }
  std::sort(p.starts.begin(), p.starts.end());
  // Memory: observed (nvidia-smi mig -lgip's "Memory GiB" x 1024, rounded down) or derived.
  const std::string memory_source = n["memory_source"] ? n["memory_source"].as<std::string>() : "derived";
  if (memory_source != "observed" && memory_source != "derived")
    return InvalidArgument("{}: 'memory_source' must be observed or derived, got '{}'", where, memory_source);
  p.memory_derived = memory_source == "derived";
  if (!p.memory_derived) {
    double gib = 0;
    try {
      gib = n["lgip_gib"] ? n["lgip_gib"].as<double>() : -1;
    } catch (const YAML::Exception&) {
      gib = -1;
    }
    if (!(gib > 0 && gib < 1 << 20))
      return InvalidArgument("{}: an observed memory_mib needs 'lgip_gib', the GiB nvidia-smi mig -lgip lists", where);
    const auto listed = static_cast<std::int64_t>(std::floor(gib * 1024));
    if (p.memory.value != listed)
      return InvalidArgument("{}: memory_mib {} is not lgip_gib {} x 1024 rounded down ({})", where, p.memory.value,
                             gib, listed);
  }
  p.placement_inferred = n["placement_source"] && n["placement_source"].as<std::string>() == "inferred";
  return p;
}

}  // namespace

// A function-try-block: a node of another shape than expected (a scalar where a map or list
// belongs, a list where a scalar does) throws from yaml-cpp's operator[] or as<>.
Result<MigCatalog> MigCatalog::Parse(std::string_view yaml_text, std::string_view source) try {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: not valid YAML: {}", source, e.what());
  }
  if (!root["gpus"] || !root["gpus"].IsSequence()) return InvalidArgument("{}: missing the 'gpus' list", source);
  MigCatalog c;
  for (const YAML::Node& g : root["gpus"]) {
    MigGpu gpu;
    if (!g["id"]) return InvalidArgument("{}: a GPU without an id", source);
    gpu.id = g["id"].as<std::string>();
    const std::string where = fmt::format("{}: {}", source, gpu.id);
    Result<int> c_slices = Int(g, "compute_slices", where, 1, 64);
    if (!c_slices) return c_slices.error();
    Result<int> m_slices = Int(g, "memory_slices", where, 1, 64);
    if (!m_slices) return m_slices.error();
    Result<int> max_inst = Int(g, "max_instances", where, 1, 64);
    if (!max_inst) return max_inst.error();
    gpu.compute_slices = *c_slices;
    gpu.memory_slices = *m_slices;
    gpu.max_instances = *max_inst;
    if (g["pci_device_ids"] && g["pci_device_ids"].IsSequence())
      for (const YAML::Node& id : g["pci_device_ids"]) gpu.pci_device_ids.push_back(id.as<std::string>());
    if (!g["profiles"] || !g["profiles"].IsSequence()) return InvalidArgument("{}: missing 'profiles'", where);
    for (const YAML::Node& p : g["profiles"]) {
      Result<MigProfile> profile = ParseProfile(p, gpu, source);
      if (!profile) return profile.error();
      gpu.profiles.push_back(std::move(*profile));
    }
    c.gpus_.push_back(std::move(gpu));
  }
  return c;
} catch (const YAML::Exception& e) {
  return InvalidArgument("{}: unexpected shape: {}", source, e.what());
}

const MigCatalog& MigCatalog::Embedded() {
  static const MigCatalog catalog = [] {
    Result<MigCatalog> c = Parse(kEmbeddedMigProfilesYaml, "data/mig_profiles.yaml (embedded)");
    if (!c) {
      std::fprintf(stderr, "gpufit: internal error: %s\n", c.error().message.c_str());
      std::abort();
    }
    return std::move(*c);
  }();
  return catalog;
}

Result<const MigGpu*> MigCatalog::Find(std::string_view id) const {
  for (const MigGpu& g : gpus_) {
    if (g.id == id) return &g;
  }
  std::vector<std::string> ids;
  for (const MigGpu& g : gpus_) ids.push_back(g.id);
  return NotFound("no MIG-capable GPU '{}' (known: {})", id, fmt::join(ids, ", "));
}

}  // namespace gpufit
