// Buffer: a float array owned through shared_ptr, recycled through a size-keyed pool so that a
// training step that repeats the same shapes allocates nothing from the system after warm-up.
// Not a general allocator: exact-size reuse only; buffer_pool_trim() returns cached memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace sl {

class Buffer {
 public:
  explicit Buffer(size_t n);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return n_; }

 private:
  float* data_;
  size_t n_;
};

// New buffer of n floats; contents undefined unless `zero`.
std::shared_ptr<Buffer> make_buffer(size_t n, bool zero = false);

// Cached (free) bytes held by the pool, and a way to give them back to the system.
size_t buffer_pool_cached_bytes();
void buffer_pool_trim();

}  // namespace sl
