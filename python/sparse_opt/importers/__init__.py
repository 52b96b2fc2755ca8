"""Graph importers: torch.fx and ONNX models to SparseOpt's input IR."""
from .emitter import AnnotationError, Emitter, ImportError_, TensorType, Value

__all__ = ["AnnotationError", "Emitter", "ImportError_", "TensorType", "Value"]
