// A hint that memory is read soon, for passes over a big module whose instructions have left the caches (a
// 200k-instruction module is ~100 MB): issued a few instructions ahead, it hides the miss behind the work between.
#pragma once

#include <cstddef>

namespace opprobe::hlo {

// The cache line holding `p`. (GCC 12 deletes a __builtin_prefetch whose address comes out of a loop as dead
// code, so x86-64 writes the instruction itself.)
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// The first `bytes` of the object at `p`, line by line.
inline void PrefetchBytes(const void* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) PrefetchLine(static_cast<const char*>(p) + off);
}

}  // namespace opprobe::hlo
