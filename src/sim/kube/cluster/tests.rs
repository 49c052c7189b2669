//! Unit tests of the simulated cluster's state machine (no HTTP).
