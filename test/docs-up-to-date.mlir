// The committed dialect and pass references match the TableGen sources
// (regenerate with `ninja -C build update-docs`).
// RUN: diff %sparse_opt_src/docs/generated/SGPUDialect.md %sparse_opt_obj/docs/Dialects/SGPUDialect.md
// RUN: diff %sparse_opt_src/docs/generated/SparseOptTransformsPasses.md %sparse_opt_obj/docs/Passes/SparseOptTransformsPasses.md
// RUN: diff %sparse_opt_src/docs/generated/SparseOptConversionPasses.md %sparse_opt_obj/docs/Passes/SparseOptConversionPasses.md
