// The allocator libevent's buffers and events use: freed blocks go to a per-thread free list by
// size class and are handed out again, so a warm worker reuses the same buffer chains request
// after request instead of calling malloc and free for each (twemproxy's mbuf free list, for
// evbuffer chains). Each thread caches a bounded amount; larger blocks go to malloc directly.
#pragma once

#include <cstddef>

namespace mcring::net {

// Where the pool gets memory it does not have cached, and gives back what it does not keep.
struct UpstreamAllocator {
  void* (*malloc_fn)(size_t);
  void* (*realloc_fn)(void*, size_t);
  void (*free_fn)(void*);
};

// Installs the pool as libevent's allocator over `upstream` (malloc/realloc/free if null). Only
// before anything else of libevent is used; later calls do nothing.
void installChunkPool(const UpstreamAllocator* upstream = nullptr);

// The pool's entry points (libevent's event_set_mem_functions signature).
void* chunkMalloc(size_t n);
void* chunkRealloc(void* p, size_t n);
void chunkFree(void* p);

}  // namespace mcring::net
