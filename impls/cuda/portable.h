// What lets one source be device code under nvcc and plain host code under the C++ compiler: the
// function qualifier, bit casts, 16-byte loads and stores, and the grid a kernel body runs over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "impls/link/host_device.h"

namespace collcheck::cuda {

// Where one thread stands in the grid a kernel body runs over: element loops take `index`, then
// every `count`-th. A body called on the host runs as the grid's only thread ({0, 1}).
struct Lanes {
  std::size_t index = 0;
  std::size_t count = 1;
};

template <typename To, typename From>
COLLCHECK_HOST_DEVICE inline To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

// Sixteen bytes, loaded and stored in one instruction on the device (the address must be 16-byte
// aligned there), through memcpy on the host.
struct alignas(16) Bytes16 {
  std::uint64_t low = 0, high = 0;
};

COLLCHECK_HOST_DEVICE inline Bytes16 load16(const std::byte* at) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Bytes16*>(at);
#else
  Bytes16 value;
  std::memcpy(&value, at, sizeof value);
  return value;
#endif
}

COLLCHECK_HOST_DEVICE inline void store16(std::byte* at, Bytes16 value) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Bytes16*>(at) = value;
#else
  std::memcpy(at, &value, sizeof value);
#endif
}

template <typename T>
COLLCHECK_HOST_DEVICE inline T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

template <typename T>
COLLCHECK_HOST_DEVICE inline void store(std::byte* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

}  // namespace collcheck::cuda
