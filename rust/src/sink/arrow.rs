//! Row images as Arrow columns (the `changes` view and typed per-table columns).
