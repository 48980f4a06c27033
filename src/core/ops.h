// Every op of the engine, one include. Each family lives in core/ops/<family>.{h,cpp} with its
// forward and backward kernels side by side.
#pragma once
#include "core/autograd.h"
#include "core/ops/attention.h"
#include "core/ops/elementwise.h"
#include "core/ops/embedding.h"
#include "core/ops/loss.h"
#include "core/ops/matmul.h"
#include "core/ops/norm.h"
#include "core/ops/reduce.h"
#include "core/ops/scan.h"
#include "core/ops/shape.h"
#include "core/ops/softmax.h"
#include "core/tensor.h"
#include "util/error.h"
