#include "gpufit/inference/service_spec.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "gpufit/core/test_support.h"
#include "gpufit/inference/inference_study.h"

namespace gpufit {
namespace {

constexpr const char* kTwo = R"(services:
  - name: chat
    namespace: llm
    requests: {format: azure-llm, path: traces/conv.csv}
    gpu: h100-80gb
    llm: {model: llama-3.1-8b, max_num_seqs: 64}
    cold_start: {load_gb_per_s: 2, init_s: 10}
    slo: {metric: ttft, seconds: 1.5}
  - name: sd
    requests: {format: gentd26-qps, path: $GPUFIT_DATA/gentd26/qps.csv}
    service_time: {seconds: 3}
    concurrency: 2
    cold_start: {seconds: 20}
    slo: {metric: wait, seconds: 1, target: 0.995}
    window_s: 600
    hpa: {target_utilization: 0.5}
)";

TEST(ServiceSpecTest, ReadsServicesWithDefaultsAndResolvedPaths) {
  testing::TempDir dir;
  setenv("GPUFIT_DATA", "/data", 1);
  const auto s = ReadInferenceServices(dir.Write("services.yaml", kTwo));
  unsetenv("GPUFIT_DATA");
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->size(), 2u);
  const InferenceServiceSpec& chat = (*s)[0];
  EXPECT_EQ(chat.kube_namespace, "llm");
  EXPECT_EQ(chat.deployment, "chat");  // defaults to the name
  EXPECT_EQ(chat.requests_path, dir.path() + "/traces/conv.csv");
  EXPECT_EQ(*chat.llm_model, "llama-3.1-8b");
  EXPECT_EQ(chat.llm_params.max_num_seqs, 64);
  EXPECT_DOUBLE_EQ(chat.llm_params.decode_mbu, 0.77);
  EXPECT_DOUBLE_EQ(chat.load_gb_per_s, 2);
  EXPECT_EQ(chat.slo.metric, SloMetric::kTtft);
  EXPECT_DOUBLE_EQ(chat.slo.target, 0.99);
  EXPECT_DOUBLE_EQ(chat.window_s, 60);
  const InferenceServiceSpec& sd = (*s)[1];
  EXPECT_EQ(sd.format, RequestFormat::kGenTd26Qps);
  EXPECT_EQ(sd.requests_path, "/data/gentd26/qps.csv");
  EXPECT_EQ(sd.kube_namespace, "default");
  EXPECT_EQ(sd.concurrency, 2);
  EXPECT_DOUBLE_EQ(sd.service_s, 3);
  EXPECT_DOUBLE_EQ(sd.cold_start_s, 20);
  EXPECT_DOUBLE_EQ(sd.hpa.target_utilization, 0.5);
  EXPECT_DOUBLE_EQ(sd.hpa.stabilization_s, 300);
}

TEST(ServiceSpecTest, ErrorsNameTheServiceAndField) {
  testing::TempDir dir;
  const std::string base = R"(services:
  - name: a
    requests: {format: generic, path: t.csv}
    service_time: {seconds: 1}
    cold_start: {seconds: 5}
    slo: {metric: wait, seconds: 1}
)";
  const auto error = [&](const std::string& extra, const std::string& from, const std::string& to) {
    std::string text = base + extra;
    if (!from.empty()) text.replace(text.find(from), from.size(), to);
    const auto r = ReadInferenceServices(dir.Write("s.yaml", text));
    return r ? std::string("no error") : r.error().message;
  };
  EXPECT_EQ(error("", "", ""), "no error");
  EXPECT_NE(error("    windw_s: 60\n", "", "").find("unknown field 'windw_s'"), std::string::npos);
  EXPECT_NE(error("", "metric: wait", "metric: p99").find("slo.metric must be"), std::string::npos);
  EXPECT_NE(error("", "metric: wait", "metric: ttft").find("ttft needs an LLM"), std::string::npos);
  EXPECT_NE(error("", "{seconds: 1}", "{seconds: 1, samples_path: x.csv}").find("exactly one"), std::string::npos);
  EXPECT_NE(error("", "format: generic", "format: csv").find("requests.format"), std::string::npos);
  EXPECT_NE(
      error("", "seconds: 1}\n    cold", "seconds: -1}\n    cold").find("service_time: field 'seconds' must be >= 0"),
      std::string::npos);
  EXPECT_NE(error("", "{seconds: 5}", "{load_gb_per_s: 1}").find("needs llm.model"), std::string::npos);
  EXPECT_NE(error("  - name: a\n    requests: {format: generic, path: t.csv}\n    service_time: {seconds: 1}\n"
                  "    cold_start: {seconds: 5}\n    slo: {metric: wait, seconds: 1}\n",
                  "", "")
                .find("appears twice"),
            std::string::npos);
  const std::string where = error("", "slo: {metric: wait, seconds: 1}", "slo: {metric: wait, seconds: 1, target: 1}");
  EXPECT_NE(where.find("services[0] 'a'"), std::string::npos) << where;
  EXPECT_NE(error("", "name: a", "name: ../up").find("must be a DNS-1123 label"), std::string::npos);
  EXPECT_NE(error("    namespace: My NS\n", "", "").find("namespace 'My NS'"), std::string::npos);
  EXPECT_NE(error("    concurrency: 1.5\n", "", "").find("whole number"), std::string::npos);
  EXPECT_NE(error("    concurrency: 3000000000\n", "", "").find("whole number from 1 to 100000"), std::string::npos);
  EXPECT_NE(error("    llm: {model: llama-2-13b}\n", "", "").find("not both"), std::string::npos);
  EXPECT_NE(error("", "service_time: {seconds: 1}", "llm: {model: llama-2-13b, tpot_ms: 20}").find("not a mix"),
            std::string::npos);
  EXPECT_FALSE(ReadInferenceServices(dir.path() + "/missing.yaml"));
  EXPECT_FALSE(ReadInferenceServices(dir.path()));
  EXPECT_FALSE(ReadInferenceServices(dir.Write("bad.yaml", "services: [\n")));
}

// What only the data can tell: a stray timestamp, all-zero service times, an SLO that too
// many requests miss even alone. Errors name the service.
TEST(ServiceSpecTest, PrepareRefusesWhatNoScheduleCanServe) {
  testing::TempDir dir;
  dir.Write("stray.csv", "timestamp_s\n0\n1700000000\n1700000001\n");
  dir.Write("ok.csv", "timestamp_s\n0\n1\n2\n3\n");
  dir.Write("zeros.csv", "value\n0\n0\n");
  const auto prepare = [&](const std::string& body) {
    const auto specs = ReadInferenceServices(dir.Write("s.yaml", "services:\n  - name: a\n" + body));
    if (!specs) return specs.error().message;
    const auto p = PrepareService(specs->front());
    return p ? std::string("no error") : p.error().message;
  };
  const std::string common = "    cold_start: {seconds: 5}\n";
  EXPECT_NE(prepare("    requests: {format: generic, path: stray.csv}\n    service_time: {seconds: 1}\n" + common +
                    "    slo: {metric: wait, seconds: 1}\n")
                .find("stray.csv spans 19675.9 days"),
            std::string::npos);
  EXPECT_NE(prepare("    requests: {format: generic, path: ok.csv}\n    service_time: {samples_path: zeros.csv}\n" +
                    common + "    slo: {metric: wait, seconds: 1}\n")
                .find("service times average 0 s, below a microsecond"),
            std::string::npos);
  // Service 10 s against a 5 s latency SLO: every request misses even alone.
  EXPECT_NE(prepare("    requests: {format: generic, path: ok.csv}\n    service_time: {seconds: 10}\n" + common +
                    "    slo: {metric: latency, seconds: 5}\n")
                .find("the SLO cannot be met: 4 of 4 requests"),
            std::string::npos);
  EXPECT_NE(prepare("    requests: {format: generic, path: ok.csv}\n    service_time: {seconds: 1}\n    gpu: nope\n" +
                    common + "    slo: {metric: wait, seconds: 1}\n")
                .find("service 'a': gpu: unknown"),
            std::string::npos);
  EXPECT_EQ(prepare("    requests: {format: generic, path: ok.csv}\n    service_time: {seconds: 1}\n" + common +
                    "    slo: {metric: wait, seconds: 1}\n"),
            "no error");
}

}  // namespace
}  // namespace gpufit
