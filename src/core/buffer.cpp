// The buffer pool: free lists keyed by exact size, guarded by one mutex.
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace sl {
namespace {

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<float*>> free;
  size_t cached_bytes = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: buffers may outlive static destruction order
  return *p;
}

float* pool_get(size_t n) {
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    auto it = p.free.find(n);
    if (it != p.free.end() && !it->second.empty()) {
      float* f = it->second.back();
      it->second.pop_back();
      p.cached_bytes -= n * sizeof(float);
      return f;
    }
  }
  size_t bytes = ((n == 0 ? 1 : n) * sizeof(float) + 63) / 64 * 64;
  void* mem = std::aligned_alloc(64, bytes);
  if (!mem) throw std::bad_alloc();
  return static_cast<float*>(mem);
}

void pool_put(float* f, size_t n) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.free[n].push_back(f);
  p.cached_bytes += n * sizeof(float);
}

}  // namespace

Buffer::Buffer(size_t n) : data_(pool_get(n)), n_(n) {}
Buffer::~Buffer() { pool_put(data_, n_); }

std::shared_ptr<Buffer> make_buffer(size_t n, bool zero) {
  auto b = std::make_shared<Buffer>(n);
  if (zero && n) std::memset(b->data(), 0, n * sizeof(float));
  return b;
}

size_t buffer_pool_cached_bytes() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.cached_bytes;
}

void buffer_pool_trim() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  for (auto& [n, list] : p.free)
    for (float* f : list) std::free(f);
  p.free.clear();
  p.cached_bytes = 0;
}

}  // namespace sl
