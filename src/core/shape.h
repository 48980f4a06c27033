// Shape: up to four dimensions, stored inline (no heap allocation per tensor).
// Negative indices count from the back, as in PyTorch: shape[-1] is the last dimension.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace sl {

class Shape {
 public:
  static constexpr int kMaxDims = 4;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int ndim() const { return ndim_; }
  int64_t operator[](int i) const;
  int64_t back() const { return (*this)[-1]; }
  int64_t numel() const;
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + ndim_}; }
  // "(4,64)": the form used in every error message.
  std::string str() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

}  // namespace sl
