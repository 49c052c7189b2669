//! The console on a real pty (its stdin, stdout and stderr, and its controlling terminal, as
//! under sshd): a terminal that goes away under it (a dropped SSH session: the master side
//! closes) makes it leave with 129 (128 + SIGHUP), without a panic on the writes that now
//! fail; a `TERM=dumb` terminal is refused with a clear message.

use crate::common;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous bound on waits; nothing here asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(30);

/// A new pty: (master, slave), 100×30.
fn open_pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: two out-pointers to plain ints and a valid winsize.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // Not inherited: a master left open in the child would keep the terminal alive.
    for fd in [master, slave] {
        // SAFETY: fcntl on a descriptor just opened.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: openpty returned two open descriptors that nothing else owns.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

/// `command` on the pty's slave side as its controlling terminal, in its own session.
fn on_pty(command: &mut Command, slave: &OwnedFd) {
    for (stdio, name) in [(0, "stdin"), (1, "stdout"), (2, "stderr")] {
        let fd = slave.try_clone().unwrap_or_else(|e| panic!("{name}: {e}"));
        match stdio {
            0 => command.stdin(Stdio::from(fd)),
            1 => command.stdout(Stdio::from(fd)),
            _ => command.stderr(Stdio::from(fd)),
        };
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Read the master side until `what` appears in what the console drew.
fn wait_for_screen(master: &mut std::fs::File, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(what) {
        assert!(Instant::now() < deadline, "no {what:?} on the screen");
        match master.read(&mut chunk) {
            Ok(0) | Err(_) => panic!("the pty closed before {what:?} appeared"),
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
        }
    }
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kvtop did not leave after its terminal closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_closed_pty_exits_129_without_a_panic() {
    let home = tempfile::tempdir().unwrap();
    let (mut master, slave) = open_pty();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command
        .args(["demo", "--no-kube", "--engines", "2"])
        .env("TERM", "xterm-256color")
        .env("RUST_BACKTRACE", "0");
    common::isolate_home(&mut command, home.path());
    on_pty(&mut command, &slave);
    let mut child = command.spawn().unwrap();
    // Only the console holds the slave side now.
    drop(command);
    drop(slave);
    wait_for_screen(&mut master, "demo");
    // Let it draw a few frames and log, then take the terminal away.
    std::thread::sleep(Duration::from_millis(1500));
    drop(master);
    let status = wait_exit(&mut child);
    let log = std::fs::read_dir(home.path().join("state").join("kvtop"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(!log.contains("panic"), "{log}");
    assert_eq!(status.code(), Some(129), "{status:?}\n{log}");
}

#[test]
fn a_dumb_terminal_is_refused_with_a_clear_message() {
    let home = tempfile::tempdir().unwrap();
    let (mut master, slave) = open_pty();
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command
        .args(["demo", "--no-kube", "--engines", "2"])
        .env("TERM", "dumb");
    common::isolate_home(&mut command, home.path());
    on_pty(&mut command, &slave);
    let mut child = command.spawn().unwrap();
    drop(command);
    drop(slave);
    let status = wait_exit(&mut child);
    let mut said = Vec::new();
    let _ = master.read_to_end(&mut said);
    let said = String::from_utf8_lossy(&said);
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("TERM=dumb cannot show the console"), "{said}");
    // Nothing a dumb terminal would print as garbage: no escape sequence at all.
    assert!(!said.contains('\u{1b}'), "{said:?}");
}
