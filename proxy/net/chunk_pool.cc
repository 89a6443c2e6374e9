// ChunkPool: size-class free lists per thread, a header before each block naming its class.
#include "proxy/net/chunk_pool.h"

#include <event2/event.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace mcring::net {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kPooling = false;  // let the sanitizers see every block's life
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif
#else
constexpr bool kPooling = true;
#endif

// Classes of 2^k bytes of payload, 64 B to 128 KiB (a socket read reserves up to 64 KiB, plus
// libevent's chain header). Larger blocks are not cached.
constexpr int kMinShift = 6;
constexpr int kClasses = 12;
constexpr uint32_t kUncached = 0xff;
// Bytes of free blocks one thread keeps per class (at least 4 blocks).
constexpr size_t kCachePerClass = 256 * 1024;

// 16 bytes so that payloads keep malloc's alignment.
struct alignas(16) Header {
  uint32_t cls;
  uint32_t unused;
  size_t size;  // payload bytes usable (the class size, or the exact size if uncached)
};

struct FreeBlock {
  FreeBlock* next;
};

struct ThreadCache {
  FreeBlock* head[kClasses] = {};
  size_t count[kClasses] = {};
  ~ThreadCache();
};

UpstreamAllocator g_upstream{std::malloc, std::realloc, std::free};
bool g_installed = false;
thread_local ThreadCache t_cache;

ThreadCache::~ThreadCache() {
  for (int c = 0; c < kClasses; ++c) {
    while (head[c] != nullptr) {
      FreeBlock* b = head[c];
      head[c] = b->next;
      g_upstream.free_fn(reinterpret_cast<Header*>(b) - 1);
    }
  }
}

int classOf(size_t n) {
  size_t size = size_t{1} << kMinShift;
  for (int c = 0; c < kClasses; ++c, size <<= 1) {
    if (n <= size) {
      return c;
    }
  }
  return -1;
}

size_t classSize(int c) {
  return size_t{1} << (kMinShift + c);
}

size_t cacheLimit(int c) {
  size_t blocks = kCachePerClass / classSize(c);
  return blocks < 4 ? 4 : blocks;
}

}  // namespace

void* chunkMalloc(size_t n) {
  const int c = kPooling ? classOf(n) : -1;
  if (c >= 0) {
    ThreadCache& cache = t_cache;
    if (FreeBlock* b = cache.head[c]) {
      cache.head[c] = b->next;
      --cache.count[c];
      return b;
    }
  }
  const size_t payload = c >= 0 ? classSize(c) : n;
  auto* h = static_cast<Header*>(g_upstream.malloc_fn(sizeof(Header) + payload));
  if (h == nullptr) {
    return nullptr;
  }
  h->cls = c >= 0 ? static_cast<uint32_t>(c) : kUncached;
  h->size = payload;
  return h + 1;
}

void chunkFree(void* p) {
  if (p == nullptr) {
    return;
  }
  Header* h = static_cast<Header*>(p) - 1;
  if (h->cls != kUncached) {
    ThreadCache& cache = t_cache;
    if (cache.count[h->cls] < cacheLimit(static_cast<int>(h->cls))) {
      auto* b = static_cast<FreeBlock*>(p);
      b->next = cache.head[h->cls];
      cache.head[h->cls] = b;
      ++cache.count[h->cls];
      return;
    }
  }
  g_upstream.free_fn(h);
}

void* chunkRealloc(void* p, size_t n) {
  if (p == nullptr) {
    return chunkMalloc(n);
  }
  Header* h = static_cast<Header*>(p) - 1;
  if (n <= h->size) {
    return p;
  }
  void* q = chunkMalloc(n);
  if (q == nullptr) {
    return nullptr;
  }
  std::memcpy(q, p, h->size);
  chunkFree(p);
  return q;
}

void installChunkPool(const UpstreamAllocator* upstream) {
  if (g_installed) {
    return;
  }
  g_installed = true;
  if (upstream != nullptr) {
    g_upstream = *upstream;
  }
  event_set_mem_functions(chunkMalloc, chunkRealloc, chunkFree);
}

}  // namespace mcring::net
