"""Which ONNX ops the importer knows, by family: what each becomes in a workload (shapes only)."""

from __future__ import annotations

# Element types -> workload dtype; the first float-typed graph input (then initializer) decides.
FLOAT_DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 17: "fp8", 18: "fp8", 19: "fp8", 20: "fp8", 11: "fp32",
                23: "fp4"}  # 23: FLOAT4E2M1 (onnx 1.18)
INT_DTYPES = {3: "int8", 2: "int8", 22: "int4", 21: "int4"}  # INT8, UINT8, INT4, UINT4 (onnx 1.16)

LAYOUT_OPS = {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Constant", "Shape",
              "Size"}
SAME_SHAPE_OPS = {"Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "Tanh", "Gelu", "Erf", "HardSwish",
                  "Swish", "Softmax", "LogSoftmax", "LayerNormalization", "RMSNormalization",
                  "SimplifiedLayerNormalization", "BatchNormalization", "LRN", "Identity", "Dropout",
                  "FastGelu", "BiasGelu", "QuickGelu"}
ACTIVATIONS = {"Relu": "relu", "LeakyRelu": "relu", "PRelu": "relu", "Sigmoid": "sigmoid", "HardSigmoid": "sigmoid",
               "Tanh": "tanh", "Gelu": "gelu", "Erf": "gelu", "HardSwish": "hardswish", "Swish": "silu",
               "FastGelu": "gelu", "BiasGelu": "gelu", "QuickGelu": "gelu"}
ACTIVATION_NOTES = {"LeakyRelu": "LeakyRelu costed as activation relu",
                    "PRelu": "PRelu costed as activation relu",
                    "HardSigmoid": "HardSigmoid costed as activation sigmoid",
                    "Erf": "Erf (the erf-based GELU pattern) costed as activation gelu; the Mul/Add/Div around it "
                           "stay element-wise layers"}
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Sum"}
VECTOR = {"BatchNormalization": "batchnorm", "LayerNormalization": "layernorm", "RMSNormalization": "rmsnorm",
          "SimplifiedLayerNormalization": "rmsnorm", "Softmax": "softmax", "LogSoftmax": "softmax"}
POOLS = ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")
# (activation input, weight input) positions of the conv / matmul families.
CONV_OPS = {"Conv": (0, 1), "ConvInteger": (0, 1), "QLinearConv": (0, 3)}
MATMUL_OPS = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
# onnxruntime contrib ops (domain com.microsoft) with a known mapping; other custom-domain ops are unsupported.
MS_OPS = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SimplifiedLayerNormalization"}
CONTROL_FLOW = ("If", "Loop", "Scan")  # never folded; their sub-graph bodies are not simulated
