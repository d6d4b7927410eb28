//! Hash functions. Being written.
