// torch.fx importer errors name the op, the node, its module and the user's
// source line; annotation errors name the parameter (and, with the weights
// as constants, the row and group that break the pattern; as params the
// program checks the pattern when the weight is bound). Structured sparsity
// needs f16 or bf16 weights.
// RUN: not %python %S/Inputs/fx_models.py unfold 2>&1 | FileCheck %s --check-prefix=UNFOLD
// RUN: not %python %S/Inputs/fx_models.py conv1d 2>&1 | FileCheck %s --check-prefix=CONV
// RUN: not %python %S/Inputs/fx_models.py dropout-train 2>&1 | FileCheck %s --check-prefix=DROPOUT
// RUN: not %python %S/Inputs/fx_models.py mlp --sparsity fc3.weight=2:4 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not %python %S/Inputs/fx_models.py mlp --sparsity fc1.weight=6:8 --dtype f16 --weights constants 2>&1 | FileCheck %s --check-prefix=DENSE
// RUN: not %python %S/Inputs/fx_models.py mlp --sparsity fc1.weight=2:4 2>&1 | FileCheck %s --check-prefix=F32
// RUN: not %python %S/Inputs/fx_models.py mlp --sparsity fc1.weight=3:4 2>&1 | FileCheck %s --check-prefix=PATTERN
// RUN: not %python %S/Inputs/fx_models.py mlp --sparsity fc1.bias=2:4 2>&1 | FileCheck %s --check-prefix=BIAS

// UNFOLD: error: ImportError_: unsupported op call_function torch.nn.functional.unfold at node 'unfold' ({{.*}}fx_models.py:{{[0-9]+}}: return F.unfold(x, 2))

// CONV: error: ImportError_: unsupported op call_module conv (nn.Conv1d) at node 'conv' in module 'conv' ({{.*}}fx_models.py:{{[0-9]+}}: return self.conv(self.proj(x)))

// DROPOUT: error: ImportError_: call_module drop (nn.Dropout) at node 'drop' in module 'drop' ({{.*}}): dropout in training mode (p=0.1): call model.eval() before importing

// UNKNOWN: error: AnnotationError: sparsity annotation names 'fc3.weight', which is not a parameter of the model; did you mean 'fc2.weight'?

// DENSE: error: AnnotationError: weight 'fc1.weight' is not 6:8 sparse: row 0, group 0 (columns 0..7) has 8 nonzeros

// F32: error: AnnotationError: weight 'fc1.weight' is f32, but structured sparsity runs on f16/bf16 only: use dtype=f16 or bf16

// PATTERN: error: AnnotationError: sparsity annotation for 'fc1.weight': unsupported structured sparsity 3:4

// BIAS: error: AnnotationError: weight 'fc1.bias': a 2:4 weight must be 2-D (N x K), got shape [128]
