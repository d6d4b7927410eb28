//! DTA reports and NACKs (DESIGN.md section 2). Being written.
