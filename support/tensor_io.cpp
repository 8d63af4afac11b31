// Little-endian byte conversions for safetensors and device buffers, fp16 and bf16 included.
#include "support/tensor_io.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ir/float16.h"

namespace bertc::support {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

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
      case ir::DType::F16: t.real[i] = ir::from_f16_bits(read_at<uint16_t>(stored.bytes, i)); break;
      case ir::DType::BF16: t.real[i] = ir::from_bf16_bits(read_at<uint16_t>(stored.bytes, i)); break;
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
      case ir::DType::F16: put(i, ir::f16_bits(t.real[i])); break;
      case ir::DType::BF16: put(i, ir::bf16_bits(t.real[i])); break;
      case ir::DType::I64: put(i, t.integer[i]); break;
      case ir::DType::I32: put(i, static_cast<int32_t>(t.integer[i])); break;
      case ir::DType::U8:
      case ir::DType::Bool: s.bytes[i] = static_cast<uint8_t>(t.integer[i]); break;
    }
  }
  return s;
}

}  // namespace bertc::support
