// glibc malloc settings for a process whose MiB-sized buffers (gRPC messages) come and go with
// every request: ecd, and the benchmarks' gRPC null sink, which must receive the way ecd does.
#ifndef ECD_LIB_UTIL_MALLOC_POLICY_H_
#define ECD_LIB_UTIL_MALLOC_POLICY_H_

namespace ecd {

// A fixed 16 MiB mmap threshold: gRPC reads the socket into slices of up to 4 MiB, and below
// the threshold they are reused from the heap instead of being mapped fresh (a page fault per
// 4 KiB on every read, several times the CPU of the receive itself) and unmapped again; fixed, so
// that glibc's dynamic threshold cannot climb to 32 MiB either. A 32 MiB trim threshold, which
// keeps free() from handing pages back with madvise after every message (each a TLB shootdown on
// every core). And 4 arenas, so that what they keep stays bounded (docs/limits.md). Call once at
// start-up, before any thread.
void ApplyMallocPolicy();

}  // namespace ecd

#endif  // ECD_LIB_UTIL_MALLOC_POLICY_H_
