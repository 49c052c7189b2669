//! Configuration: the TOML file model, its validation, and the resolved `Config`.
