//! Schema, data loading, the mixture model, local kernels, DPVI training and synthesis.
