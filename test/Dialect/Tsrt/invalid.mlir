// RUN: tessera-opt %s -split-input-file -verify-diagnostics

func.func @mixed(%x: tensor<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op ins and outs must both be tensors or both memrefs}}
  tsrt.all_reduce ins(%x : tensor<4xf32>) outs(%y : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @element_types(%x: memref<4xf32>, %y: memref<4xf64>) {
  // expected-error @+1 {{'tsrt.broadcast' op ins and outs have different element types ('f32', 'f64')}}
  tsrt.broadcast ins(%x : memref<4xf32>) outs(%y : memref<4xf64>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, root = 0 : i64}
  return
}

// -----

func.func @dtype_kind(%x: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op dtype int32 does not describe the element type 'f32'}}
  tsrt.all_reduce ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<int32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @dtype_signedness(%x: memref<4xui8>) {
  // An unsigned integer type names its dtype; a signless one takes either.
  // expected-error @+1 {{'tsrt.all_reduce' op dtype int8 does not describe the element type 'ui8'}}
  tsrt.all_reduce ins(%x : memref<4xui8>) outs(%x : memref<4xui8>) {dtype = #tsrt.dtype<int8>, group = 1 : i64, reduction = #tsrt.reduction<max>}
  return
}

// -----

func.func @bad_dtype(%x: memref<4xf32>) {
  // expected-error @+2 {{expected ::mlir::tsrt::DType to be one of: float32, uint8, int8, uint16, int16, int32, int64, bool, float16, float64, uint32, uint64, bfloat16}}
  // expected-error @+1 {{failed to parse Tsrt_DTypeAttr}}
  tsrt.all_reduce ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float8>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @empty_group(%x: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op group must be a non-empty mask of mesh axes, not 0}}
  tsrt.all_reduce ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 0 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @bad_id(%x: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op id must be a collective's number or -1, not -2}}
  tsrt.all_reduce ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, id = -2 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @integer_mean(%x: memref<4xi32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op reduction mean needs a float element type, not 'i32'}}
  tsrt.all_reduce ins(%x : memref<4xi32>) outs(%x : memref<4xi32>) {dtype = #tsrt.dtype<int32>, group = 1 : i64, reduction = #tsrt.reduction<mean>}
  return
}

// -----

func.func @shape(%x: memref<4xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{'tsrt.all_reduce' op ins and outs must have the same shape}}
  tsrt.all_reduce ins(%x : memref<4xf32>) outs(%y : memref<8xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @blocks(%x: memref<8x3xf32>, %y: memref<3x3xf32>) {
  // expected-error @+1 {{'tsrt.reduce_scatter' op dimension 0 of ins (8) must be a multiple of that of outs (3)}}
  tsrt.reduce_scatter ins(%x : memref<8x3xf32>) outs(%y : memref<3x3xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>}
  return
}

// -----

func.func @gather_blocks(%x: memref<2x3xf32>, %y: memref<8x2xf32>) {
  // The runtime exchanges blocks of dimension 0 only.
  // expected-error @+1 {{'tsrt.all_gather' op ins and outs differ beyond dimension 0}}
  tsrt.all_gather ins(%x : memref<2x3xf32>) outs(%y : memref<8x2xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64}
  return
}

// -----

func.func @scalar_all_to_all(%x: memref<f32>) {
  // expected-error @+1 {{'tsrt.all_to_all' op needs a dimension 0 to split into blocks}}
  tsrt.all_to_all ins(%x : memref<f32>) outs(%x : memref<f32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64}
  return
}

// -----

func.func @negative_root(%x: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.broadcast' op attribute 'root' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  tsrt.broadcast ins(%x : memref<4xf32>) outs(%x : memref<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, root = -1 : i64}
  return
}

// -----

func.func @result_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'tsrt.all_reduce' op expected type of operand #1 ('tensor<4xf32>') to match type of corresponding result ('tensor<4xf64>')}}
  %y = tsrt.all_reduce ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

func.func @async_without_wait(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsrt.all_reduce' op is async: its result must have exactly one use, a tsrt.wait}}
  %p = tsrt.all_reduce async ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

func.func @wait_on_sync(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = tsrt.all_reduce ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf32>
  // expected-error @+1 {{'tsrt.wait' op outs must be the result of an async tsrt collective}}
  %r = tsrt.wait outs(%p : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @empty_rank_group() -> i64 {
  // expected-error @+1 {{'tsrt.axis_rank' op attribute 'group' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = tsrt.axis_rank group 0
  return %r : i64
}

// -----

func.func @permute_without_peer(%x: tensor<4xf32>, %e: tensor<0xf32>) -> tensor<0xf32> {
  // expected-error @+1 {{'tsrt.permute' op send_to and recv_from must be ranks or -1, and one a rank; got -1 and -1}}
  %r = tsrt.permute ins(%x : tensor<4xf32>) outs(%e : tensor<0xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, recv_from = -1 : i64, send_to = -1 : i64} -> tensor<0xf32>
  return %r : tensor<0xf32>
}

// -----

func.func @permute_send_only_with_outs(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsrt.permute' op the side without a message must have no elements}}
  %r = tsrt.permute ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, recv_from = -1 : i64, send_to = 1 : i64} -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gemm_shapes(%a: memref<8x16xf32>, %b: memref<15x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects shapes [B,] M x K, K x N and M x N (of a and b as transposed)}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<15x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

func.func @gemm_types(%a: memref<8x16xbf16>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects f32, bf16 or f16 operands (both alike) and an f32 result}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xbf16>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

func.func @gemm_strided(%a: memref<8x16xf32, strided<[32, 1]>>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects contiguous row-major buffers, got 'memref<8x16xf32, strided<[32, 1]>>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32, strided<[32, 1]>>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

func.func @gemm_rank(%a: memref<2x8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a, b and c of rank 2, or 3 with a batch}}
  tsrt.gpu_gemm ins(%a, %b : memref<2x8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

func.func @gemm_epilogue_name(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects epilogue none, relu, bias, relu_bias, gelu, gelu_bias, bias_grad_a, bias_grad_b, relu_aux, relu_aux_bias, drelu, gelu_aux, gelu_aux_bias or dgelu, not 'silu'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "silu"}
  return
}

// -----

func.func @gemm_bias_missing(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a bias with epilogue 'bias'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "bias"}
  return
}

// -----

func.func @gemm_bias_shape(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %bias: memref<8xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects an f32 bias of the 4 columns of c, got 'memref<8xf32>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) bias(%bias : memref<8xf32>) {epilogue = "bias"}
  return
}

// -----

func.func @gemm_bias_accumulate(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %bias: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a bias on a rank-2 product without accumulate}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) bias(%bias : memref<4xf32>) {accumulate = true, epilogue = "bias"}
  return
}

// -----

func.func @attention_f32(%q: memref<1x2x8x8xf32>, %s: memref<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects bf16 or f16 operands (cuDNN's fused attention has no f32 kernels), got 'f32'}}
  tsrt.gpu_attention ins(%q, %q, %q, %s : memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<1x2x8x8xf32>, memref<f32>) outs(%q : memref<1x2x8x8xf32>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_layout(%q: memref<1x2x8x8xbf16>, %s: memref<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects k_layout to be a permutation of [0, 1, 2, 3]}}
  tsrt.gpu_attention ins(%q, %q, %q, %s : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<f32>) outs(%q : memref<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 1, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

// K stored [B, S, H, D] is logically [1, 4, 2, 8]: its heads do not match Q's 2.
func.func @attention_shapes(%q: memref<1x2x8x8xbf16>, %k: memref<1x2x4x8xbf16>, %s: memref<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects logical shapes q, out [B, H, Sq, D] and k, v [B, H, Skv, D]}}
  tsrt.gpu_attention ins(%q, %k, %k, %s : memref<1x2x8x8xbf16>, memref<1x2x4x8xbf16>, memref<1x2x4x8xbf16>, memref<f32>) outs(%q : memref<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 2, 1, 3>, v_layout = array<i64: 0, 2, 1, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_bias(%q: memref<1x2x8x8xbf16>, %s: memref<f32>, %b: memref<1x1x8x4xbf16>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects a dense bias [B or 1, H or 1, Sq, Skv] of the operands' type, got 'memref<1x1x8x4xbf16>'}}
  tsrt.gpu_attention ins(%q, %q, %q, %s : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<f32>) bias(%b : memref<1x1x8x4xbf16>) outs(%q : memref<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_stats(%q: memref<1x2x8x8xbf16>, %s: memref<f32>, %st: memref<1x2x8x1xf32>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects dense f32 stats [B, H, Sq], got 'memref<1x2x8x1xf32>'}}
  tsrt.gpu_attention ins(%q, %q, %q, %s : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<f32>) outs(%q, %st : memref<1x2x8x8xbf16>, memref<1x2x8x1xf32>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_results(%q: tensor<1x2x8x8xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention' op expects one result per destination on tensors, none or an async token on memrefs}}
  tsrt.gpu_attention ins(%q, %q, %q, %s : tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>, tensor<f32>) outs(%q : tensor<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_backward_grad(%q: memref<1x2x8x8xbf16>, %dk: memref<1x2x4x8xbf16>, %st: memref<1x2x8xf32>, %s: memref<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention_backward' op expects dk of k's logical shape}}
  tsrt.gpu_attention_backward ins(%q, %q, %q, %q, %q, %st, %s : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8xf32>, memref<f32>) outs(%q, %dk, %q : memref<1x2x8x8xbf16>, memref<1x2x4x8xbf16>, memref<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>, d_out_layout = array<i64: 0, 1, 2, 3>, dq_layout = array<i64: 0, 1, 2, 3>, dk_layout = array<i64: 0, 1, 2, 3>, dv_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

func.func @attention_backward_outs(%q: memref<1x2x8x8xbf16>, %st: memref<1x2x8xf32>, %s: memref<f32>) {
  // expected-error @+1 {{'tsrt.gpu_attention_backward' op expects outs (dq, dk, dv)}}
  tsrt.gpu_attention_backward ins(%q, %q, %q, %q, %q, %st, %s : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>, memref<1x2x8xf32>, memref<f32>) outs(%q, %q : memref<1x2x8x8xbf16>, memref<1x2x8x8xbf16>) {q_layout = array<i64: 0, 1, 2, 3>, k_layout = array<i64: 0, 1, 2, 3>, v_layout = array<i64: 0, 1, 2, 3>, out_layout = array<i64: 0, 1, 2, 3>, d_out_layout = array<i64: 0, 1, 2, 3>, dq_layout = array<i64: 0, 1, 2, 3>, dk_layout = array<i64: 0, 1, 2, 3>, dv_layout = array<i64: 0, 1, 2, 3>}
  return
}

// -----

// A collective on tensors is not on a stream yet.
func.func @collective_token_on_tensors(%x: tensor<4xf32>, %t: !gpu.async.token) -> tensor<4xf32> {
  // expected-error @+1 {{'tsrt.all_reduce' op expects one result per destination on tensors, none or an async token on memrefs}}
  %y = tsrt.all_reduce [%t] ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {dtype = #tsrt.dtype<float32>, group = 1 : i64, reduction = #tsrt.reduction<sum>} -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @wait_returns_memref(%x: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.wait' op expects one result per destination on tensors, none or an async token on memrefs}}
  %y = tsrt.wait outs(%x : memref<4xf32>) -> memref<4xf32>
  return
}

// -----

// The sum of op(a) over k has one element per row of the product.
func.func @bias_grad_length(%a: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %db: memref<4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects an f32 bias gradient of 8 elements with epilogue 'bias_grad_a', got 'memref<4xf32>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<16x8xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) bias(%db : memref<4xf32>) {epilogue = "bias_grad_a", transpose_a = true}
  return
}

// -----

func.func @bias_grad_without_bias(%a: memref<16x8xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a bias with epilogue 'bias_grad_b'}}
  tsrt.gpu_gemm ins(%a, %b : memref<16x8xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "bias_grad_b", transpose_a = true}
  return
}

// -----

func.func @drelu_without_mask(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux with epilogue 'drelu'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "drelu"}
  return
}

// -----

func.func @mask_without_aux_epilogue(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %m: memref<8x16xi8>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects no aux with epilogue 'relu'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) aux(%m : memref<8x16xi8>) {epilogue = "relu"}
  return
}

// -----

// Four columns take one 128-bit word (16 bytes) per row.
func.func @mask_shape(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %m: memref<8x4xi8>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux of type 'memref<8x16xi8>' with epilogue 'relu_aux', got 'memref<8x4xi8>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) aux(%m : memref<8x4xi8>) {epilogue = "relu_aux"}
  return
}

// -----

func.func @mask_accumulate(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %m: memref<8x16xi8>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux on a rank-2 product without accumulate}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) aux(%m : memref<8x16xi8>) {epilogue = "drelu", accumulate = true}
  return
}

// -----

func.func @dgelu_without_input(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux with epilogue 'dgelu'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "dgelu"}
  return
}

// -----

// GELU's input is f32, each row padded to a multiple of 8 elements.
func.func @gelu_input_shape(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %bias: memref<4xf32>, %x: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux of type 'memref<8x8xf32>' with epilogue 'gelu_aux_bias', got 'memref<8x4xf32>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) bias(%bias : memref<4xf32>) aux(%x : memref<8x4xf32>) {epilogue = "gelu_aux_bias"}
  return
}

// -----

func.func @gelu_input_as_mask(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %m: memref<8x8xi8>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects aux of type 'memref<8x8xf32>' with epilogue 'dgelu', got 'memref<8x8xi8>'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) aux(%m : memref<8x8xi8>) {epilogue = "dgelu"}
  return
}

// -----

func.func @gelu_aux_bias_without_bias(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %x: memref<8x8xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a bias with epilogue 'gelu_aux_bias'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) aux(%x : memref<8x8xf32>) {epilogue = "gelu_aux_bias"}
  return
}

// -----

func.func @gelu_bias_without_bias(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  // expected-error @+1 {{'tsrt.gpu_gemm' op expects a bias with epilogue 'gelu_bias'}}
  tsrt.gpu_gemm ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>) {epilogue = "gelu_bias"}
  return
}
