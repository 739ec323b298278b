#include "dcgm_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpufit/ingest/files/telemetry_readers.h"

namespace gpufit::testing {
namespace {

std::string Time(std::size_t k) { return fmt::format("{}", static_cast<long long>(kFixtureT0) + 60 * k); }

std::string DcgmLabels(int i, bool new_host_label, bool mig, const std::string& pod) {
  const std::string host = fmt::format("gpu-node-{}", i / 4);
  std::string l =
      fmt::format(R"(gpu="{}",UUID="GPU-{:08x}-0000-4000-8000-{:012x}",device="nvidia{}",)", i % 4, i, i, i % 4);
  l += R"(modelName="NVIDIA H100 80GB HBM3",)";
  l += fmt::format(R"({}="{}",)", new_host_label ? "hostname" : "Hostname", host);
  if (mig) l += R"(GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",)";
  l += R"(DCGM_FI_DRIVER_VERSION="570.124.06",)";
  l += pod.empty() ? R"(container="",namespace="",pod="")"
                   : fmt::format(R"(container="sd",namespace="genai",pod="{}")", pod);
  return l;
}

}  // namespace

Result<DcgmFixture> MakeDcgmFixture(const std::string& gentd26_dir, int pods, double hours) {
  const Result<Telemetry> tel = ReadGenTd26(gentd26_dir);
  if (!tel) return tel.error();
  const auto n = static_cast<std::size_t>(hours * 60);  // grid samples in the slice
  std::string fb = "# TYPE DCGM_FI_DEV_FB_USED gauge\n", util = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
              engine = "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n", sm = "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n",
              created = "# TYPE kube_pod_created gauge\n", cpu = "# TYPE container_cpu_usage_seconds counter\n",
              completion = "# TYPE kube_pod_completion_time gauge\n", phase = "# TYPE kube_pod_status_phase gauge\n",
              periods = "# TYPE container_cpu_cfs_periods counter\n",
              throttled = "# TYPE container_cpu_cfs_throttled_periods counter\n",
              memory = "# TYPE container_memory_working_set_bytes gauge\n",
              requests = "# TYPE kube_pod_container_resource_requests gauge\n",
              limits = "# TYPE kube_pod_container_resource_limits gauge\n";
  DcgmFixture out;
  out.long_csv = "timestamp_s,pod,metric,value,device,GPU_I_ID,GPU_I_PROFILE\n";
  out.until_s = kFixtureT0 + 60.0 * static_cast<double>(n - 1);
  int i = 0;
  for (const PodSeries& p : tel->pods) {
    if (i == pods) break;
    if (p.first >= n) continue;
    const std::size_t first = p.first;
    // Pods 1, 7, 13, ... end two thirds into the slice and keep 5 minutes of stale
    // attribution after their life.
    const bool ends_early = i % 6 == 1;
    // Pods 3, 9, 15, ... complete there too (a Job pod), their objects staying.
    const bool completes = i % 6 == 3;
    const std::size_t last = std::min(p.last, ends_early || completes ? first + (n - 1 - first) * 2 / 3 : n - 1);
    const std::string pod = fmt::format("sd-{}", i);
    const std::string key = "genai/" + pod;
    const bool mig = i % 5 == 4;
    const std::size_t mid = (first + last) / 2;
    const std::size_t stale_end = (ends_early && last + 10 <= n - 1) ? last + 5
                                  : completes                        ? std::min(n - 1, last + 30)
                                                                     : last;
    const std::size_t object_end = completes ? n - 1 : last;  // kube_pod_created's last sample
    double cpu_seconds = 0, cfs_periods = 0, cfs_throttled = 0;
    for (std::size_t k = first; k <= std::max(stale_end, object_end); ++k) {
      if (completes) {
        const std::string ksm = fmt::format(R"(namespace="genai",pod="{}",uid="uid-{}")", pod, i);
        created += fmt::format("kube_pod_created{{{}}} {} {}\n", ksm, Time(first), Time(k));
        phase += fmt::format("kube_pod_status_phase{{{},phase=\"Running\"}} {} {}\n", ksm, k > last ? 0 : 1, Time(k));
        phase += fmt::format("kube_pod_status_phase{{{},phase=\"Succeeded\"}} {} {}\n", ksm, k > last ? 1 : 0, Time(k));
        if (k > last) completion += fmt::format("kube_pod_completion_time{{{}}} {} {}\n", ksm, Time(last), Time(k));
      }
      if (k > stale_end) continue;
      const std::size_t src = std::min(k, last);
      // Stale samples: a finished Job's GPU is idle; a deleted pod's repeat its last values.
      const double mib = completes && k > last ? 0.0 : p.fb_used_mib[src];
      const double duty = completes && k > last ? 0.0 : p.gpu_util_pct[src];
      const std::string labels = DcgmLabels(i, i == 0 ? k >= mid : (i / 4) % 2 == 1, mig, pod);
      fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", labels, mib, Time(k));
      const double ratio = duty / 100.0;
      if (mig)
        engine += fmt::format("DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{}}} {} {}\n", labels, ratio, Time(k));
      else
        util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} {} {}\n", labels, duty, Time(k));
      if (i % 3 == 0) sm += fmt::format("DCGM_FI_PROF_SM_ACTIVE{{{}}} {} {}\n", labels, 0.8 * ratio, Time(k));
      if (k > last) continue;  // stale: Prometheus has it, the CSV (the truth) does not
      // The device columns as dcgm-exporter labels them (UUID, GPU_I_ID, GPU_I_PROFILE): a MIG instance's duty
      // cycle is its engine activity, a ratio, as in Prometheus.
      const std::string device = fmt::format("GPU-{:08x}-0000-4000-8000-{:012x},{}", i, i, mig ? "1,3g.40gb" : ",");
      out.long_csv += fmt::format("{},{},DCGM_FI_DEV_FB_USED,{},{}\n", Time(k), key, mib, device);
      out.long_csv += mig ? fmt::format("{},{},DCGM_FI_PROF_GR_ENGINE_ACTIVE,{},{}\n", Time(k), key, ratio, device)
                          : fmt::format("{},{},DCGM_FI_DEV_GPU_UTIL,{},{}\n", Time(k), key, duty, device);
      if (!completes)
        created += fmt::format(R"(kube_pod_created{{namespace="genai",pod="{}",uid="uid-{}"}} {} {})"
                               "\n",
                               pod, i, Time(first), Time(k));
      cpu_seconds += 60.0 * (0.5 + duty / 50.0);
      cfs_periods += 600;  // 100 ms CFS periods
      cfs_throttled += 1.5 * duty;
      const std::string c = fmt::format(R"(container="sd",namespace="genai",pod="{}",image="sd:1")", pod);
      cpu += fmt::format("container_cpu_usage_seconds_total{{{}}} {} {}\n", c, cpu_seconds, Time(k));
      periods += fmt::format("container_cpu_cfs_periods_total{{{}}} {} {}\n", c, cfs_periods, Time(k));
      throttled += fmt::format("container_cpu_cfs_throttled_periods_total{{{}}} {} {}\n", c, cfs_throttled, Time(k));
      memory += fmt::format("container_memory_working_set_bytes{{{}}} {} {}\n", c,
                            std::llround((4096 + mib / 8) * 1048576.0), Time(k));
      const std::string ksm = fmt::format(R"(namespace="genai",pod="{}",uid="uid-{}",container="sd",node="{}")", pod, i,
                                          fmt::format("gpu-node-{}", i / 4));
      requests +=
          fmt::format("kube_pod_container_resource_requests{{{},resource=\"cpu\",unit=\"core\"}} 4 {}\n", ksm, Time(k));
      requests +=
          fmt::format("kube_pod_container_resource_requests{{{},resource=\"memory\",unit=\"byte\"}} 34359738368 {}\n",
                      ksm, Time(k));
      limits += fmt::format(
          "kube_pod_container_resource_limits{{{},resource=\"memory\",unit=\"byte\"}} 51539607552 {}\n", ksm, Time(k));
    }
    ++i;
  }
  // Two GPUs no pod holds: the first idle, the second used by a process outside any pod.
  for (int g = 0; g < 2; ++g) {
    const std::string labels = DcgmLabels(100 + g, false, false, "");
    for (std::size_t k = 0; k < n; k += 1) {
      const double mib = g == 0 ? 0.0 : k == n / 2 ? out.outside_pods_peak_mib : 6000.0;
      fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", labels, mib, Time(k));
      util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} 0 {}\n", labels, Time(k));
    }
  }
  out.pods = i;
  out.openmetrics = fb + util + engine + sm + created + completion + phase + cpu + periods + throttled + memory +
                    requests + limits + "# EOF\n";
  return out;
}

}  // namespace gpufit::testing
