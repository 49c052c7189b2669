//! Shared test helpers: an adversarial HTTP server on 127.0.0.1 and tool detection.
#![allow(dead_code)]

pub mod bad_server;

/// True when CI asked that no test be skipped.
pub fn require_all() -> bool {
    std::env::var("KVTOP_TEST_REQUIRE_ALL").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Whether an external program is on PATH. When it is missing, the test is skipped with a
/// printed reason, unless KVTOP_TEST_REQUIRE_ALL is set, in which case it fails.
pub fn have_program(name: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()));
    if !found {
        assert!(
            !require_all(),
            "{name} is required (KVTOP_TEST_REQUIRE_ALL is set) but was not found on PATH"
        );
        eprintln!("skipping: {name} not found on PATH");
    }
    found
}
