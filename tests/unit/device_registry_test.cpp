// The device table: devices by the name --device takes, with capabilities instead of names for
// callers to ask, and an unknown name refused with the choices.
#include <gtest/gtest.h>

#include "runtime/device_registry.h"

namespace bertc::runtime {
namespace {

TEST(DeviceRegistry, ListsTheDevicesByName) {
  std::vector<std::string_view> names;
  for (const DeviceKind& kind : device_kinds()) {
    names.push_back(kind.name);
    EXPECT_FALSE(kind.description.empty()) << kind.name;
    EXPECT_NE(kind.open, nullptr) << kind.name;
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{"host", "cuda"}));
  EXPECT_EQ(&device_kind("cuda"), &device_kinds()[1]);
}

TEST(DeviceRegistry, RefusesAnUnknownNameListingTheDevices) {
  try {
    device_kind("tpu");
    FAIL() << "an unknown device was found";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no device 'tpu' (devices: host, cuda)");
  }
}

// The Host device runs the kernels of the arch it is opened for: what callers read instead of
// asking which device it is.
TEST(DeviceRegistry, TheHostDeviceIsNoGpuAndRunsTheArchAskedFor) {
  for (int sm : {0, 80}) {
    const std::shared_ptr<Device> host = open_device("host", {sm, std::filesystem::temp_directory_path()});
    EXPECT_FALSE(host->capabilities().gpu);
    EXPECT_EQ(host->capabilities().sm, sm);
  }
}

// A probe never throws; what it found (a GPU, or why there is none) is text for the user.
TEST(DeviceRegistry, ProbingTheGpuNeverThrowsAndSaysWhat) {
  const DeviceProbe probe = device_kind("cuda").probe();
  EXPECT_FALSE(probe.found.empty());
  if (!probe.usable) {
    EXPECT_THROW(open_device("cuda", {}), std::runtime_error);
  }
}

}  // namespace
}  // namespace bertc::runtime
