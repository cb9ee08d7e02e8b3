// ApplyMallocPolicy: mallopt calls; see the header for why each value.
#include "lib/util/malloc_policy.h"

#include <malloc.h>

namespace ecd {

void ApplyMallocPolicy() {
  mallopt(M_ARENA_MAX, 4);
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

}  // namespace ecd
