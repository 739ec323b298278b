#include "gpufit/catalog/gpu_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

TEST(GpuCatalog, EmbeddedCatalogHasTheIssuesModelsWithDatasheetMemory) {
  struct Case {
    const char* id;
    std::int64_t memory_mib;  // nvidia_smi_total_mib in ../shared/reference/gpu_catalog.yaml
  };
  const Case cases[] = {{"t4", 15360},        {"a10g", 23028},          {"l4", 23034},
                        {"l40s", 46068},      {"a100-40gb", 40960},     {"a100-80gb", 81920},
                        {"h100-80gb", 81559}, {"h100-94gb-nvl", 95830}, {"h200-141gb", 143771}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    const Result<GpuModel> m = GpuCatalog::Embedded().Find(c.id);
    ASSERT_TRUE(m.has_value()) << m.error().message;
    EXPECT_EQ(m->memory, MiB{c.memory_mib});
    EXPECT_GT(m->on_demand_per_gpu_hour.value, 0);
    EXPECT_GT(m->spot_per_gpu_hour.value, 0);
    EXPECT_LT(m->spot_per_gpu_hour.value, m->on_demand_per_gpu_hour.value);
  }
  // AWS us-east-1 list, 2026-07-20: p5.4xlarge 6.88 USD/h for one H100.
  EXPECT_DOUBLE_EQ(GpuCatalog::Embedded().Find("h100-80gb")->on_demand_per_gpu_hour.value, 6.88);
  // Relative BF16: H100 SXM is the reference; A100 312 / 989.4.
  EXPECT_DOUBLE_EQ(*GpuCatalog::Embedded().Find("h100-80gb")->relative_bf16, 1.0);
  EXPECT_NEAR(*GpuCatalog::Embedded().Find("a100-80gb")->relative_bf16, 312 / 989.4, 1e-12);
  // Bandwidth and BF16 TFLOPS as ../shared/reference/gpu_catalog.yaml gives them.
  EXPECT_DOUBLE_EQ(*GpuCatalog::Embedded().Find("a100-80gb")->memory_bandwidth_gb_s, 2039);
  EXPECT_DOUBLE_EQ(*GpuCatalog::Embedded().Find("h100-80gb")->memory_bandwidth_gb_s, 3350);
  EXPECT_DOUBLE_EQ(*GpuCatalog::Embedded().Find("a100-80gb")->bf16_tflops, 312);
  EXPECT_FALSE(GpuCatalog::Embedded().Find("t4")->bf16_tflops);  // no BF16 tensor cores
}

TEST(GpuCatalog, ModelsAreOrderedByPrice) {
  const auto& models = GpuCatalog::Embedded().models();
  for (std::size_t i = 1; i < models.size(); ++i) {
    EXPECT_LE(models[i - 1].on_demand_per_gpu_hour, models[i].on_demand_per_gpu_hour);
  }
}

TEST(GpuCatalog, UnknownModelIsNotFoundAndListsKnownIds) {
  const Result<GpuModel> m = GpuCatalog::Embedded().Find("h100");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, Code::kNotFound);
  EXPECT_THAT(m.error().message, HasSubstr("unknown GPU model 'h100'"));
  EXPECT_THAT(m.error().message, HasSubstr("h100-80gb"));
}

TEST(GpuCatalog, BadFilesNameTheProblem) {
  struct Case {
    const char* name;
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"no list", "schema_version: 1\n", "missing list 'gpus'"},
      {"negative memory",
       "gpus:\n  - {id: x, memory_mib: -1, on_demand_usd_per_gpu_hour: 1, spot_usd_per_gpu_hour: 1}\n",
       "gpu 'x': memory_mib must be >= 0"},
      {"missing price", "gpus:\n  - {id: x, memory_mib: 5}\n", "gpu 'x': missing field on_demand_usd_per_gpu_hour"},
      {"duplicate",
       "gpus:\n  - {id: x, memory_mib: 5, on_demand_usd_per_gpu_hour: 1, spot_usd_per_gpu_hour: 1}\n"
       "  - {id: x, memory_mib: 5, on_demand_usd_per_gpu_hour: 1, spot_usd_per_gpu_hour: 1}\n",
       "duplicate gpu id 'x'"},
      {"syntax", "gpus: [\n", "my.yaml: line"},
      {"a CSV file", "a,b,c\n1,2,3\n", "expected a YAML map"},
      {"gpus not a list", "gpus: 3\n", "missing list 'gpus'"},
      {"entry not a map", "gpus: [3]\n", "my.yaml"},
      {"text where a number is",
       "gpus:\n  - {id: x, memory_mib: lots, on_demand_usd_per_gpu_hour: 1, spot_usd_per_gpu_hour: 1}\n",
       "gpu 'x': memory_mib is not a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<GpuCatalog> r = GpuCatalog::Parse(c.yaml, "my.yaml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_THAT(r.error().message, HasSubstr(c.expect));
  }
}

}  // namespace
}  // namespace gpufit
