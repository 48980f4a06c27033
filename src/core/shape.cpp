// Shape construction, checks and printing.
#include "core/shape.h"

#include "util/error.h"

namespace sl {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(const std::vector<int64_t>& dims) {
  if (dims.size() > static_cast<size_t>(kMaxDims))
    throw ShapeError("[shape] at most 4 dimensions are supported, got " +
                     std::to_string(dims.size()));
  for (int64_t d : dims)
    if (d < 0) throw ShapeError("[shape] negative dimension " + std::to_string(d));
  ndim_ = static_cast<int>(dims.size());
  for (int i = 0; i < ndim_; ++i) dims_[static_cast<size_t>(i)] = dims[static_cast<size_t>(i)];
}

int64_t Shape::operator[](int i) const {
  int j = i < 0 ? i + ndim_ : i;
  SL_CHECK(j >= 0 && j < ndim_, "dim " + std::to_string(i) + " of shape " + str());
  return dims_[static_cast<size_t>(j)];
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[static_cast<size_t>(i)]);
  }
  return s + ")";
}

bool Shape::operator==(const Shape& o) const {
  if (ndim_ != o.ndim_) return false;
  for (int i = 0; i < ndim_; ++i)
    if (dims_[static_cast<size_t>(i)] != o.dims_[static_cast<size_t>(i)]) return false;
  return true;
}

}  // namespace sl
