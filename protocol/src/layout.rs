//! Layouts. Being written.
