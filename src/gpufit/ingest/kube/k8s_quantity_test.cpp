#include "gpufit/ingest/kube/k8s_quantity.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(K8sQuantityTest, ParsesEverySuffixOfTheGrammar) {
  const struct {
    const char* text;
    double value;
  } cases[] = {
      {"1", 1},
      {"0", 0},
      {"1.5", 1.5},
      {".5", 0.5},
      {"500m", 0.5},
      {"100n", 1e-7},
      {"5u", 5e-6},
      {"1k", 1e3},
      {"2M", 2e6},
      {"3G", 3e9},
      {"1T", 1e12},
      {"1P", 1e15},
      {"1E", 1e18},
      {"1Ki", 1024},
      {"16Gi", 17179869184.0},
      {"123Mi", 128974848},
      {"1Ti", 1099511627776.0},
      {"1Ei", 1152921504606846976.0},
      {"129e6", 1.29e8},
      {"1E3", 1e3},
      {"12e-3", 0.012},
      {"1e+2", 100},
      {"+2", 2},
      {"-1", -1},
  };
  for (const auto& c : cases) {
    const auto v = ParseQuantity(c.text);
    ASSERT_TRUE(v) << c.text << ": " << v.error().message;
    EXPECT_DOUBLE_EQ(*v, c.value) << c.text;
  }
}

TEST(K8sQuantityTest, RefusesMalformedText) {
  for (const char* bad :
       {"", "Gi", "1.2.3", "1Zi", "1 Gi", "1e", "1e+", "nan", "inf", "1gi", "1mi", "--1", "1e99999"}) {
    const auto v = ParseQuantity(bad);
    EXPECT_FALSE(v) << bad;
    if (!v) {
      EXPECT_NE(v.error().message.find("quantity '"), std::string::npos);
    }
  }
}

TEST(K8sQuantityTest, ConvertsToMillicoresMibAndDevices) {
  EXPECT_EQ(*CpuQuantity("500m"), MilliCpu{500});
  EXPECT_EQ(*CpuQuantity("2"), MilliCpu{2000});
  EXPECT_EQ(*CpuQuantity("0.1"), MilliCpu{100});
  EXPECT_EQ(*CpuQuantity("100u"), MilliCpu{1});  // rounded up to Kubernetes' 1m
  EXPECT_FALSE(CpuQuantity("-1"));
  EXPECT_EQ(*MemoryQuantity("16Gi"), MiB{16384});
  EXPECT_EQ(*MemoryQuantity("128974848"), MiB{123});
  EXPECT_EQ(*MemoryQuantity("1G"), MiB{954});  // 1e9 bytes = 953.67 MiB, rounded up
  // A node's memory rounds down: 1025Ki holds 1 whole MiB, not 2 (a 2Mi request must not fit).
  EXPECT_EQ(*MemoryQuantity("1025Ki", MemoryRounding::kDown), MiB{1});
  EXPECT_EQ(*MemoryQuantity("1025Ki"), MiB{2});
  EXPECT_EQ(*MemoryQuantity("1G", MemoryRounding::kDown), MiB{953});
  EXPECT_EQ(*MemoryQuantity("16Gi", MemoryRounding::kDown), MiB{16384});
  EXPECT_FALSE(MemoryQuantity("-5Mi"));
  EXPECT_EQ(*DeviceQuantity("2"), 2);
  EXPECT_FALSE(DeviceQuantity("1.5"));
  EXPECT_FALSE(DeviceQuantity("500m"));
}

// Found by strings_fuzz: "1e33" cores was cast to int64 millicores (undefined behaviour).
// Kubernetes keeps a quantity in an int64 of bytes or millicores: 2^63 = 9223372036854775808.
TEST(K8sQuantityTest, RefusesQuantitiesBeyondInt64) {
  EXPECT_EQ(CpuQuantity("1e33").error().message, "quantity '1e33': above 2^63 millicores, more than Kubernetes holds");
  EXPECT_EQ(*CpuQuantity("9e15"), MilliCpu{9'000'000'000'000'000'000});  // 9e18 millicores < 2^63
  EXPECT_FALSE(CpuQuantity("1e16"));                                     // 1e19 millicores > 2^63
  EXPECT_EQ(MemoryQuantity("8Ei").error().message,
            "quantity '8Ei': above 2^63 bytes (8 EiB), more than Kubernetes holds");  // 8 x 2^60 = 2^63
  EXPECT_EQ(*MemoryQuantity("7Ei"), MiB{7LL << 40});                                  // 7 x 2^60 bytes = 7 x 2^40 MiB
}

}  // namespace
}  // namespace gpufit
