// check_error, the measure bertc check compares a device's values with: relative to the
// reference's largest magnitude, absolute for noise-level tensors, and infinite for a NaN, an
// integer mismatch or a type mismatch.
#include <gtest/gtest.h>

#include <cmath>

#include "support/tensor_io.h"
#include "train/step_check.h"

namespace bertc::train {

using namespace bertc::support;
namespace {

using ir::HostTensor;

HostTensor<float> reals(std::vector<float> v) {
  HostTensor<float> t = HostTensor<float>::zeros({ir::DType::F32, {static_cast<int64_t>(v.size())}});
  t.real = std::move(v);
  return t;
}

TEST(CheckError, IsTheLargestDifferenceOverTheLargestMagnitude) {
  EXPECT_DOUBLE_EQ(check_error(reals({1, -4, 2}), reals({1, -4, 2})), 0.0);
  EXPECT_NEAR(check_error(reals({1, -4, 2.5f}), reals({1, -4, 2})), 0.5 / 4, 1e-12);
}

TEST(CheckError, MeasuresNoiseLevelTensorsAgainstTheFloor) {
  // Both sides are rounding noise of a zero gradient: 2e-9 apart is 2e-3 of the 1e-6 floor, not
  // the 100% that dividing by the largest magnitude (2e-9) would say.
  EXPECT_NEAR(check_error(reals({1e-9f, 0}), reals({-1e-9f, 2e-9f})), 2e-9 / 1e-6, 1e-6);
  // A floor from the operands' scale (check_graph: 1e-3 of the largest operand, here 10).
  EXPECT_NEAR(check_error(reals({3e-4f}), reals({-1e-4f}), 1e-2), 4e-4 / 1e-2, 1e-7);
  // Below a result's own magnitude the floor changes nothing.
  EXPECT_NEAR(check_error(reals({1.5f}), reals({1.0f}), 1e-2), 0.5, 1e-12);
}

TEST(CheckError, IsInfiniteForNanIntegerOrTypeMismatch) {
  EXPECT_TRUE(std::isinf(check_error(reals({1, NAN}), reals({1, 2}))));
  HostTensor<float> a = HostTensor<float>::zeros({ir::DType::I32, {2}}), b = a;
  b.integer[1] = 1;
  EXPECT_TRUE(std::isinf(check_error(a, b)));
  EXPECT_DOUBLE_EQ(check_error(a, a), 0.0);
  EXPECT_TRUE(std::isinf(check_error(reals({0, 0}), a)));
}

TEST(GraphCheck, FirstBeyondIsTheEarliestValueOverTolerance) {
  GraphCheck c;
  c.values = {{0, "a", 1e-6}, {1, "b", 0.5}, {2, "c", NAN}, {3, "d", 0.9}};
  EXPECT_EQ(c.first_beyond(1e-3), 1u);
  EXPECT_EQ(c.first_beyond(0.6), 2u);  // a NaN error is beyond any tolerance
  c.values.resize(1);
  EXPECT_EQ(c.first_beyond(1e-3), 1u);  // none: values.size()
}

}  // namespace
}  // namespace bertc::train
