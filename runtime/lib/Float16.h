//===- Float16.h - float16 and bfloat16 conversions -------------*- C++ -*-===//
//
// The runtime's one implementation of IEEE binary16 (float16) and bfloat16
// conversions, used by reductions, state initialization and tessera-run's
// printing. Header-only so that tessera-run and the unit tests use the same
// code without it being exported from the shared library. Nothing here is
// part of the C ABI.
//
// Conversions to float are exact. Conversions from float round to nearest,
// ties to even; values too large become infinity, values too small become
// float16 subnormals or zero. A NaN stays a NaN of the same sign, made quiet,
// keeping as much of its payload as fits.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_FLOAT16_H
#define TESSERA_RUNTIME_LIB_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace tsr {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0x1f) // Infinity, or a NaN made quiet.
    return floatFromBits(sign | 0x7f800000 | (mantissa << 13) |
                         (mantissa ? 0x400000 : 0));
  if (exponent != 0)
    return floatFromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0)
    return floatFromBits(sign);
  // A subnormal: normalize it.
  exponent = 113;
  while (!(mantissa & 0x400)) {
    mantissa <<= 1;
    --exponent;
  }
  return floatFromBits(sign | (exponent << 23) | ((mantissa & 0x3ff) << 13));
}

inline uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: quiet, with the payload's top bits.
    return sign | 0x7e00 | ((magnitude >> 13) & 0x3ff);
  if (magnitude >= 0x477ff000) // Rounds to 65520 or more: infinity.
    return sign | 0x7c00;
  if (magnitude < 0x38800000) { // Below 2^-14: a subnormal or zero.
    int shift = 126 - static_cast<int>(magnitude >> 23);
    if (shift > 24) // Below 2^-25: rounds to zero.
      return sign;
    uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half; // May carry into the smallest normal, correctly encoded.
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (magnitude >> 13) - (112u << 10);
  uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float bfloat16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  if ((word & 0x7fffffff) > 0x7f800000) // NaN: made quiet.
    word |= 0x400000;
  return floatFromBits(word);
}

inline uint16_t floatToBfloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: quiet, top of the payload.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest even; the largest floats carry into infinity.
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_FLOAT16_H
