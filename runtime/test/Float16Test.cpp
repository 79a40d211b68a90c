//===- Float16Test.cpp - float16 and bfloat16 conversions -----------------===//
//
// Checks lib/Float16.h exhaustively over every 16-bit pattern, and the
// rounding of floats at and next to every midpoint between neighbouring
// 16-bit values, against values computed independently with ldexp.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

using namespace tsr;

namespace {

/// A float16 pattern's value, computed from the format's definition.
double halfValue(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0)
    value = std::ldexp(mantissa, -24);
  else if (exponent == 31)
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  else
    value = std::ldexp(mantissa | 0x400, exponent - 25);
  return (bits & 0x8000) ? -value : value;
}

bool isHalfNan(uint16_t bits) { return (bits & 0x7fff) > 0x7c00; }
bool isBfloat16Nan(uint16_t bits) { return (bits & 0x7fff) > 0x7f80; }
bool isQuietFloatNan(float value) {
  return std::isnan(value) && (floatBits(value) & 0x400000);
}

/// Converts every 16-bit pattern to float and back. NaNs come back quiet
/// (`quietBit` set) with their sign and payload, every other value exactly;
/// `expectValue(bits, value)` checks each float that is not a NaN.
template <typename ToFloat, typename FromFloat, typename IsNan,
          typename ExpectValue>
void expectEveryPatternRoundTrips(ToFloat toFloat, FromFloat fromFloat,
                                  IsNan isNan, uint16_t quietBit,
                                  ExpectValue expectValue) {
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    uint16_t bits = static_cast<uint16_t>(i);
    float value = toFloat(bits);
    EXPECT_EQ(std::signbit(value), (bits & 0x8000) != 0) << std::hex << i;
    if (isNan(bits)) {
      EXPECT_TRUE(isQuietFloatNan(value)) << std::hex << i;
      EXPECT_EQ(fromFloat(value), bits | quietBit) << std::hex << i;
      continue;
    }
    expectValue(bits, value);
    EXPECT_EQ(fromFloat(value), bits) << std::hex << i;
  }
}

/// Checks that `convert` rounds the midpoint between the neighbouring
/// positive patterns `low` and `low + 1` (whose values are `lowValue` and
/// `highValue`) to the even one, and the floats next to it to the nearer.
template <typename Convert>
void expectRoundsAround(uint16_t low, double lowValue, double highValue,
                        Convert convert) {
  float mid = static_cast<float>((lowValue + highValue) / 2);
  ASSERT_EQ(static_cast<double>(mid), (lowValue + highValue) / 2) << low;
  uint16_t even = (low & 1) ? low + 1 : low;
  EXPECT_EQ(convert(mid), even) << std::hex << low;
  EXPECT_EQ(convert(-mid), even | 0x8000) << std::hex << low;
  EXPECT_EQ(convert(std::nextafter(mid, 0.0f)), low) << std::hex << low;
  EXPECT_EQ(convert(std::nextafter(mid, INFINITY)), low + 1) << std::hex << low;
}

} // namespace

TEST(Float16, EveryPatternConvertsExactlyAndRoundTrips) {
  expectEveryPatternRoundTrips(
      halfToFloat, floatToHalf, isHalfNan, 0x200,
      [](uint16_t bits, float value) {
        EXPECT_EQ(static_cast<double>(value), halfValue(bits))
            << std::hex << bits;
      });
}

TEST(Float16, RoundsToNearestEven) {
  // Every pair of neighbouring finite positive values, subnormals included;
  // past the largest finite value (65504) the next step would be 65536.
  for (uint16_t low = 0; low < 0x7c00; ++low) {
    double high = low == 0x7bff ? 65536.0 : halfValue(low + 1);
    expectRoundsAround(low, halfValue(low), high, floatToHalf);
  }
}

TEST(Float16, OverflowsToInfinityAndUnderflowsToZero) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::max()), 0xfc00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);
}

TEST(Float16, NanStaysAQuietNan) {
  float quiet = std::numeric_limits<float>::quiet_NaN();
  float signalling = std::numeric_limits<float>::signaling_NaN();
  for (float nan : {quiet, -quiet, signalling, -signalling,
                    floatFromBits(0x7f800001), floatFromBits(0xffc00001)}) {
    uint16_t half = floatToHalf(nan);
    EXPECT_TRUE(isHalfNan(half)) << std::hex << floatBits(nan);
    EXPECT_TRUE(half & 0x200) << std::hex << floatBits(nan);
    EXPECT_EQ((half & 0x8000) != 0, std::signbit(nan));
    uint16_t brain = floatToBfloat16(nan);
    EXPECT_TRUE(isBfloat16Nan(brain)) << std::hex << floatBits(nan);
    EXPECT_TRUE(brain & 0x40) << std::hex << floatBits(nan);
    EXPECT_EQ((brain & 0x8000) != 0, std::signbit(nan));
  }
}

TEST(Bfloat16, EveryPatternConvertsExactlyAndRoundTrips) {
  expectEveryPatternRoundTrips(
      bfloat16ToFloat, floatToBfloat16, isBfloat16Nan, 0x40,
      [](uint16_t bits, float value) {
        EXPECT_EQ(floatBits(value), static_cast<uint32_t>(bits) << 16)
            << std::hex << bits;
      });
}

TEST(Bfloat16, RoundsToNearestEvenAndOverflowsToInfinity) {
  for (uint16_t low = 0; low < 0x7f80; ++low) {
    double lowValue = bfloat16ToFloat(low);
    double high = low == 0x7f7f ? std::ldexp(1.0, 128)
                                : static_cast<double>(bfloat16ToFloat(low + 1));
    if (low == 0x7f7f) {
      // The midpoint is past the largest float: check its neighbours only.
      EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);
      EXPECT_EQ(floatToBfloat16(floatFromBits(0x7f7f7fff)), 0x7f7f);
      continue;
    }
    expectRoundsAround(low, lowValue, high, floatToBfloat16);
  }
  EXPECT_EQ(floatToBfloat16(INFINITY), 0x7f80);
  EXPECT_EQ(floatToBfloat16(-INFINITY), 0xff80);
}
