// A hint that memory is read soon, for passes over a big module whose instructions have left the caches (a
// 200k-instruction module is ~100 MB): issued a few instructions ahead, it hides the miss behind the work between.
#pragma once

#include <cstddef>
#include <cstdint>

namespace opprobe::support {

// The cache line holding `p`. (GCC 12 deletes a __builtin_prefetch whose address comes out of a loop as dead
// code, so x86-64 writes the instruction itself.)
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// Every cache line of [p, p + bytes).
inline void PrefetchBytes(const void* p, size_t bytes) {
  constexpr size_t kLine = 64;
  // A step of one line from p touches every line but perhaps the last, which the last byte names.
  if (bytes == 0) return;
  const char* first = static_cast<const char*>(p);
  for (size_t at = 0; at < bytes; at += kLine) PrefetchLine(first + at);
  PrefetchLine(first + bytes - 1);
}

}  // namespace opprobe::support
