//! The simulated fleet: vLLM engines and DCGM exporters served over real HTTP on 127.0.0.1.
