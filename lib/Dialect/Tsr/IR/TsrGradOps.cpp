//===- TsrGradOps.cpp - Verifiers of the ops of backward passes -----------===//
//
// The backward ops take the forward op's attributes and name the forward
// shapes in their operand and result types; each verifier recomputes the
// forward op's result shape from them and checks it against `dy`.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tsr;

static RankedTensorType getTensor(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// Checks that conv(x, w) with `op`'s attributes is well formed and has the
/// shape of `dy`, all three of one element type.
template <typename OpT>
static LogicalResult verifyConvGrad(OpT op, RankedTensorType x,
                                    RankedTensorType w, RankedTensorType dy) {
  int64_t rank = x.getRank(), k = rank - 2;
  if (k < 1 || k > 3)
    return op.emitOpError("input must have rank 3, 4 or 5, got ") << rank;
  if (w.getRank() != rank || dy.getRank() != rank)
    return op.emitOpError("input, kernel and dy must have one rank, got ")
           << rank << ", " << w.getRank() << " and " << dy.getRank();
  if (w.getElementType() != x.getElementType() ||
      dy.getElementType() != x.getElementType())
    return op.emitOpError("input, kernel and dy element types differ");
  ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads(),
                    dilations = op.getDilations();
  if ((int64_t)strides.size() != k || (int64_t)dilations.size() != k ||
      (int64_t)pads.size() != 2 * k)
    return op.emitOpError("strides and dilations need ")
           << k << " entries and pads " << 2 * k;
  int64_t group = static_cast<int64_t>(op.getGroup());
  int64_t c = x.getDimSize(1), m = w.getDimSize(0);
  if (group < 1 || c % group != 0 || m % group != 0)
    return op.emitOpError("group ") << group << " must divide input channels "
                                    << c << " and output channels " << m;
  if (w.getDimSize(1) * group != c)
    return op.emitOpError("kernel has ")
           << w.getDimSize(1) << " channels per group, input needs "
           << c / group;
  SmallVector<int64_t> shape = {x.getDimSize(0), m};
  for (int64_t i = 0; i < k; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[k + i] < 0)
      return op.emitOpError("strides and dilations must be positive and pads "
                            "non-negative");
    shape.push_back(windowOutputSize(x.getDimSize(2 + i), w.getDimSize(2 + i),
                                     strides[i], pads[i], pads[k + i],
                                     dilations[i], /*ceilMode=*/false));
  }
  if (dy.getShape() != ArrayRef<int64_t>(shape))
    return op.emitOpError("dy must have the forward result shape [")
           << shape << "], got " << dy;
  return success();
}

LogicalResult ConvBackwardDataOp::verify() {
  return verifyConvGrad(*this, getType(), getTensor(getW()),
                        getTensor(getDy()));
}

LogicalResult ConvBackwardFilterOp::verify() {
  return verifyConvGrad(*this, getTensor(getX()), getType(),
                        getTensor(getDy()));
}

/// Both backward ops do the multiply-adds of the forward convolution.
static int64_t convFlops(RankedTensorType w, RankedTensorType dy) {
  return 2 * product(w.getShape().drop_front()) * dy.getNumElements();
}

int64_t ConvBackwardDataOp::getFlops() {
  return convFlops(getTensor(getW()), getTensor(getDy()));
}

int64_t ConvBackwardFilterOp::getFlops() {
  return convFlops(getType(), getTensor(getDy()));
}

LogicalResult MaxPoolGradOp::verify() {
  RankedTensorType x = getTensor(getX()), dy = getTensor(getDy());
  if (getType() != x)
    return emitOpError("result must have the type of x, got ") << getType();
  if (dy.getElementType() != x.getElementType() || dy.getRank() != x.getRank())
    return emitOpError("dy must have the rank and element type of x");
  int64_t k = x.getRank() - 2;
  if (k < 1)
    return emitOpError("x must have rank at least 3");
  ArrayRef<int64_t> kernel = getKernelShape(), strides = getStrides(),
                    pads = getPads(), dilations = getDilations();
  if ((int64_t)kernel.size() != k || (int64_t)strides.size() != k ||
      (int64_t)dilations.size() != k || (int64_t)pads.size() != 2 * k)
    return emitOpError("kernel_shape, strides and dilations need ")
           << k << " entries and pads " << 2 * k;
  SmallVector<int64_t> shape(x.getShape().take_front(2));
  for (int64_t i = 0; i < k; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 ||
        pads[k + i] < 0)
      return emitOpError("kernel_shape, strides and dilations must be "
                         "positive and pads non-negative");
    if (pads[i] >= kernel[i] * dilations[i] ||
        pads[k + i] >= kernel[i] * dilations[i])
      return emitOpError("pads must be smaller than the window");
    shape.push_back(windowOutputSize(x.getDimSize(2 + i), kernel[i], strides[i],
                                     pads[i], pads[k + i], dilations[i],
                                     getCeilMode()));
  }
  if (dy.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("dy must have the forward result shape [")
           << shape << "], got " << dy;
  return success();
}
