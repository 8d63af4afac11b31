// Little-endian byte conversions for safetensors, including fp16 and bf16 decoding.
#include "runtime/tensor_io.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace bertc::runtime {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

float half_to_float(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename S>
S read_at(const std::vector<uint8_t>& bytes, size_t i) {
  S v;
  std::memcpy(&v, bytes.data() + i * sizeof(S), sizeof(S));
  return v;
}

}  // namespace

HostTensor to_host(const StoredTensor& stored, ir::DType dtype, const std::string& what) {
  HostTensor t = HostTensor::zeros({dtype, stored.shape});
  const size_t n = static_cast<size_t>(t.numel());
  const bool stored_float = ir::is_float(stored.dtype);
  if (stored_float != t.is_real())
    throw SafetensorsError(fmt::format("{}: stored as {}, which does not convert to {}", what,
                                       ir::dtype_name(stored.dtype), ir::dtype_name(dtype)));
  for (size_t i = 0; i < n; ++i) {
    switch (stored.dtype) {
      case ir::DType::F64: t.real[i] = static_cast<float>(read_at<double>(stored.bytes, i)); break;
      case ir::DType::F32: t.real[i] = read_at<float>(stored.bytes, i); break;
      case ir::DType::F16: t.real[i] = half_to_float(read_at<uint16_t>(stored.bytes, i)); break;
      case ir::DType::BF16: t.real[i] = bf16_to_float(read_at<uint16_t>(stored.bytes, i)); break;
      case ir::DType::I64: t.integer[i] = read_at<int64_t>(stored.bytes, i); break;
      case ir::DType::I32: t.integer[i] = read_at<int32_t>(stored.bytes, i); break;
      case ir::DType::U8:
      case ir::DType::Bool: t.integer[i] = stored.bytes[i]; break;
    }
  }
  return t;
}

StoredTensor to_stored(const HostTensor& t) {
  StoredTensor s{t.is_real() ? ir::DType::F32 : ir::DType::I64, t.type.shape, {}};
  if (t.is_real()) {
    s.bytes.resize(t.real.size() * 4);
    std::memcpy(s.bytes.data(), t.real.data(), s.bytes.size());
  } else {
    s.bytes.resize(t.integer.size() * 8);
    std::memcpy(s.bytes.data(), t.integer.data(), s.bytes.size());
  }
  return s;
}

StoredTensor to_storage(const HostTensor& t) {
  const ir::DType d = t.type.dtype;
  StoredTensor s{d, t.type.shape, std::vector<uint8_t>(static_cast<size_t>(t.type.bytes()))};
  auto put = [&](size_t i, const auto& v) { std::memcpy(s.bytes.data() + i * sizeof(v), &v, sizeof(v)); };
  for (size_t i = 0; i < static_cast<size_t>(t.numel()); ++i) {
    switch (d) {
      case ir::DType::F64: put(i, static_cast<double>(t.real[i])); break;
      case ir::DType::F32: put(i, t.real[i]); break;
      case ir::DType::F16: put(i, static_cast<_Float16>(t.real[i])); break;  // round to nearest even
      case ir::DType::BF16: {
        uint32_t u;
        std::memcpy(&u, &t.real[i], 4);
        const uint16_t b = std::isnan(t.real[i]) ? static_cast<uint16_t>((u >> 16) | 0x40)
                                                 : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        put(i, b);
        break;
      }
      case ir::DType::I64: put(i, t.integer[i]); break;
      case ir::DType::I32: put(i, static_cast<int32_t>(t.integer[i])); break;
      case ir::DType::U8:
      case ir::DType::Bool: s.bytes[i] = static_cast<uint8_t>(t.integer[i]); break;
    }
  }
  return s;
}

}  // namespace bertc::runtime
