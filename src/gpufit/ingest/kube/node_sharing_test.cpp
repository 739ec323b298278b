#include "gpufit/ingest/kube/node_sharing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "kube_fixture.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

// The three formats HAMi's device plugin writes into hami.io/node-nvidia-register, built field
// by field as its encoders write them (Project-HAMi/HAMi, node_sharing.h cites the lines).
// Up to v2.4: id,count,devmem,devcore,type,numa,health, every GPU ending with ':'.
constexpr const char* kHami24 =
    "GPU-8aa2c1d0-0000-0000-0000-000000000001,10,81920,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:"
    "GPU-8aa2c1d0-0000-0000-0000-000000000002,10,81920,100,NVIDIA-NVIDIA A100-SXM4-80GB,1,false:";
// v2.5 to v2.7: ...,health,index,mode.
constexpr const char* kHami26 =
    "GPU-aaaa,10,15360,100,NVIDIA-Tesla T4,0,true,0,hami-core:GPU-bbbb,4,15360,100,NVIDIA-Tesla T4,0,true,1,mps:";
// v2.8 on: JSON, every field omitempty (index 0 and numa 0 absent), v2.8-v2.9's devicepairscore.
constexpr const char* kHami28 =
    R"([{"id":"GPU-c1","count":10,"devmem":81559,"devcore":100,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core",)"
    R"("health":true,"devicepairscore":{}},{"id":"GPU-c2","index":1,"count":10,"devmem":81559,"devcore":100,)"
    R"("type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true}])";

TEST(HamiRegister, DecodesTheSevenFieldFormatOfV24) {
  const Result<std::vector<HamiDevice>> d = DecodeHamiRegister(kHami24);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->size(), 2U);
  EXPECT_EQ((*d)[0].uuid, "GPU-8aa2c1d0-0000-0000-0000-000000000001");
  EXPECT_EQ((*d)[0].split_count, 10);
  EXPECT_EQ((*d)[0].memory.value, 81920);
  EXPECT_EQ((*d)[0].cores, 100);
  EXPECT_TRUE((*d)[0].healthy);
  EXPECT_FALSE((*d)[1].healthy);
  EXPECT_EQ((*d)[0].mode, "hami-core");
  EXPECT_EQ(HamiProduct((*d)[0].type), "NVIDIA A100-SXM4-80GB");
}

TEST(HamiRegister, DecodesTheNineFieldFormatOfV25ToV27) {
  const Result<std::vector<HamiDevice>> d = DecodeHamiRegister(kHami26);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->size(), 2U);
  EXPECT_EQ((*d)[1].uuid, "GPU-bbbb");
  EXPECT_EQ((*d)[1].split_count, 4);
  EXPECT_EQ((*d)[1].mode, "mps");
  EXPECT_EQ(HamiProduct((*d)[0].type), "Tesla T4");
}

TEST(HamiRegister, DecodesTheJsonFormatOfV28WithFieldsLeftOut) {
  const Result<std::vector<HamiDevice>> d = DecodeHamiRegister(kHami28);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->size(), 2U);
  EXPECT_EQ((*d)[0].memory.value, 81559);
  EXPECT_TRUE((*d)[0].healthy);
  EXPECT_EQ(HamiProduct((*d)[1].type), "NVIDIA H100 80GB HBM3");
}

TEST(HamiRegister, MalformedValuesNameTheGpuAndField) {
  const auto error = [](const std::string& v) {
    const Result<std::vector<HamiDevice>> d = DecodeHamiRegister(v);
    return d ? std::string("decoded") : d.error().message;
  };
  EXPECT_THAT(error("GPU-a,10,81920,100,NVIDIA-x:"), HasSubstr("GPU 0: 5 fields"));
  EXPECT_THAT(error("GPU-a,10,8x,100,NVIDIA-x,0,true:"), HasSubstr("GPU 0: devmem: '8x' is not a whole number"));
  EXPECT_THAT(error("GPU-a,10,1,100,NVIDIA-x,0,yes:"), HasSubstr("health: 'yes'"));
  EXPECT_THAT(error("[{\"id\":\"g\",\"devmem\":-5}]"), HasSubstr("[0].devmem"));
  EXPECT_THAT(error("[{\"count\":1}]"), HasSubstr("[0].id: missing"));
  EXPECT_THAT(error("[oops"), HasSubstr("not a JSON array"));
  EXPECT_THAT(error(""), HasSubstr("no GPU"));
  EXPECT_THAT(error("[]"), HasSubstr("no GPU"));
  // What HAMi never registers.
  EXPECT_THAT(error("GPU-a,0,81920,100,NVIDIA-x,0,true:"), HasSubstr("count 0"));
  EXPECT_THAT(error("GPU-a,10,0,100,NVIDIA-x,0,true:"), HasSubstr("devmem 0"));
  EXPECT_THAT(error("GPU-a,10,81920,300,NVIDIA-x,0,true:"), HasSubstr("devcore 300"));
  EXPECT_THAT(error("GPU-a,10,81920,100,NVIDIA-x,0,true,0,bogus:"), HasSubstr("mode 'bogus'"));
  EXPECT_THAT(error(R"([{"id":"g","count":1,"devmem":1,"devcore":100,"health":"true"}])"),
              HasSubstr("[0].health: expected true or false"));
  EXPECT_THAT(error(R"([{"id":"g","count":1,"devmem":1,"devcore":100,"type":5}])"),
              HasSubstr("[0].type: expected a string"));
}

KubeNode GpuNode(const std::string& name, int gpus) {
  return KubeNode{.name = name,
                  .devices_capacity = {{"nvidia.com/gpu", gpus}},
                  .devices_allocatable = {{"nvidia.com/gpu", gpus}},
                  .gpu_product = "NVIDIA-A100-SXM4-80GB",
                  .gpu_count = gpus};
}

TEST(NodeSharing, EachSystemFromWhatItWritesOnTheNode) {
  // HAMi advertises 2 GPUs x 10 splits = 20 nvidia.com/gpu and nothing else.
  KubeNode hami = GpuNode("hami-1", 20);
  hami.annotations[kHamiRegisterAnnotation] = kHami24;
  Result<NodeSharing> s = SharingOfNode(hami, nullptr);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->system, "hami");
  EXPECT_EQ(s->physical_gpus, 2);
  EXPECT_EQ(s->product, "NVIDIA A100-SXM4-80GB");

  KubeNode dra{.name = "dra-1", .dra_gpus = 8, .dra_product = "NVIDIA A100 80GB PCIe"};
  EXPECT_EQ(SharingOfNode(dra, nullptr)->system, "dra");
  EXPECT_EQ(SharingOfNode(dra, nullptr)->physical_gpus, 8);

  KubeNode sliced = GpuNode("ts-1", 16);
  sliced.gpu_count = 4;
  sliced.sharing_strategy = "time-slicing";
  sliced.gpu_replicas = 4;
  EXPECT_EQ(SharingOfNode(sliced, nullptr)->system, "time-slicing");
  EXPECT_EQ(SharingOfNode(sliced, nullptr)->physical_gpus, 4);
  KubeNode old_gfd = GpuNode("ts-2", 8);
  old_gfd.gpu_replicas = 4;  // GFD before v0.15 writes no sharing-strategy
  EXPECT_EQ(SharingOfNode(old_gfd, nullptr)->system, "time-slicing");

  KubeNode mig = GpuNode("mig-1", 8);
  mig.mig_strategy = "mixed";
  EXPECT_EQ(SharingOfNode(mig, nullptr)->system, "mig");

  KubeNode plain = GpuNode("gpu-1", 8);
  EXPECT_EQ(SharingOfNode(plain, nullptr)->system, "device-plugin");
  const std::vector<KubePod> pods = {
      KubePod{.namespace_name = "ml", .name = "frac", .node_name = "gpu-1", .annotations = {{"gpu-fraction", "0.5"}}}};
  EXPECT_EQ(SharingOfNode(plain, &pods)->system, "kai");
  EXPECT_EQ(SharingOfNode(KubeNode{.name = "cpu-1"}, nullptr)->system, "");

  KubeNode broken = GpuNode("hami-2", 10);
  broken.annotations[kHamiRegisterAnnotation] = "GPU-a,10:";
  ASSERT_FALSE(SharingOfNode(broken, nullptr));
  EXPECT_THAT(SharingOfNode(broken, nullptr).error().message, HasSubstr("node hami-2: hami.io/node-nvidia-register"));
}

TEST(NodeSharing, TheClusterGetsTheBackEndOfMostGpus) {
  KubeNode h1 = GpuNode("h1", 40), h2 = GpuNode("h2", 40), ts = GpuNode("ts", 8);
  h1.annotations[kHamiRegisterAnnotation] = kHami24;  // 2 GPUs
  h2.annotations[kHamiRegisterAnnotation] = kHami28;  // 2 GPUs
  // 4 HAMi GPUs (not 80 advertised shares) against the device plugin's 8: time-slicing.
  Result<SharingChoice> c = ChooseSharing({h1, h2, ts}, nullptr);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->backend, "time-slicing");
  EXPECT_EQ(c->why, "hami: 2 nodes, 4 GPUs; time-slicing: 1 node, 8 GPUs");
  ts.gpu_count = 2;
  c = ChooseSharing({h1, h2, ts}, nullptr);
  EXPECT_EQ(c->backend, "hami");
  EXPECT_EQ(ChooseSharing({}, nullptr)->backend, "time-slicing");
}

TEST(NodeSharing, TheReaderKeepsAnnotationsAndCountsDraResourceSlices) {
  using testing::List;
  using testing::Node;
  testing::Json hami = Node({.name = "hami-1", .capacity = {{"nvidia.com/gpu", "20"}}});
  hami["metadata"]["annotations"][kHamiRegisterAnnotation] = kHami26;
  const testing::Json dra = Node({.name = "dra-1"});
  // resource.k8s.io/v1 (attributes on the device) and v1beta1 (under basic), one GPU each,
  // a MIG device that is not counted, and another driver's slice that is ignored.
  const testing::Json v1 = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "dra-1-gpu.nvidia.com-abc"}}},
      {"spec",
       {{"driver", "gpu.nvidia.com"},
        {"nodeName", "dra-1"},
        {"pool", {{"name", "dra-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices",
         {{{"name", "gpu-0"},
           {"attributes", {{"type", {{"string", "gpu"}}}, {"productName", {{"string", "NVIDIA A100 80GB PCIe"}}}}},
           {"capacity", {{"memory", {{"value", "80Gi"}}}}}},
          {{"name", "gpu-1-mig-0"}, {"attributes", {{"type", {{"string", "mig"}}}}}}}}}}};
  const testing::Json v1beta1 = {
      {"apiVersion", "resource.k8s.io/v1beta1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "dra-1-gpu.nvidia.com-def"}}},
      {"spec",
       {{"driver", "gpu.nvidia.com"},
        {"nodeName", "dra-1"},
        {"pool", {{"name", "dra-1"}, {"generation", 1}, {"resourceSliceCount", 2}}},
        {"devices", {{{"name", "gpu-2"}, {"basic", {{"attributes", {{"type", {{"string", "gpu"}}}}}}}}}}}}};
  const testing::Json other = {{"kind", "ResourceSlice"},
                               {"metadata", {{"name", "nic"}}},
                               {"spec", {{"driver", "net.example.com"}, {"devices", testing::Json::array()}}}};
  const testing::TempDir dir;
  const Result<std::vector<KubeNode>> nodes =
      ReadKubeNodes(dir.Write("nodes.json", List({hami, dra, v1, v1beta1, other}).dump()));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2U);
  EXPECT_EQ((*nodes)[0].name, "dra-1");
  EXPECT_EQ((*nodes)[0].dra_gpus, 2);
  EXPECT_EQ((*nodes)[0].dra_product, "NVIDIA A100 80GB PCIe");
  EXPECT_EQ((*nodes)[1].annotations.at(kHamiRegisterAnnotation), kHami26);
  EXPECT_EQ(SharingOfNode((*nodes)[1], nullptr)->system, "hami");

  // A slice listed twice counts once; a newer generation of the pool replaces the older.
  const Result<std::vector<KubeNode>> twice =
      ReadKubeNodes(dir.Write("twice.json", List({dra, v1, v1beta1, v1, v1beta1}).dump()));
  ASSERT_TRUE(twice) << twice.error().message;
  EXPECT_EQ((*twice)[0].dra_gpus, 2);
  testing::Json newer = v1;
  newer["spec"]["pool"]["generation"] = 2;
  newer["spec"]["devices"].erase(1);  // gpu-0 only
  const Result<std::vector<KubeNode>> republished =
      ReadKubeNodes(dir.Write("newer.json", List({dra, v1, v1beta1, newer}).dump()));
  ASSERT_TRUE(republished) << republished.error().message;
  EXPECT_EQ((*republished)[0].dra_gpus, 1);
  // Attributes of the wrong shape are errors, not skipped devices.
  testing::Json bare = v1;
  bare["spec"]["devices"][0]["attributes"]["type"] = "gpu";
  const Result<std::vector<KubeNode>> shape = ReadKubeNodes(dir.Write("bare.json", List({dra, bare}).dump()));
  ASSERT_FALSE(shape);
  EXPECT_THAT(shape.error().message, HasSubstr(".spec.devices[0].attributes.type: expected {\"string\": ...}"));

  testing::Json stray = v1;
  stray["spec"]["nodeName"] = "gone";
  const Result<std::vector<KubeNode>> bad = ReadKubeNodes(dir.Write("bad.json", List({dra, stray}).dump()));
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("ResourceSlice 0: .spec.nodeName: node 'gone' is not in the file"));
}

}  // namespace
}  // namespace gpufit
