//! Driving the real `kvtop` binary in a private tmux server: start it in a pane, read the
//! screen, send keys and signals, and check what it leaves behind (tty modes, the alternate
//! screen, the cursor, processes).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Name of the one session (and window) every [`Tmux`] runs.
const SESSION: &str = "kvtop";

/// A tmux server of its own (`-L socket`), killed on drop.
pub struct Tmux {
    socket: String,
}

/// What the pane's shell prints after kvtop exits: its status, then the tty's canonical and
/// echo modes, one per line.
pub const EXIT_LINE: &str = "kvtop exited with status";
const TTY_PREFIX: &str = "tty: ";

impl Tmux {
    /// A new server; `tag` keeps servers of parallel tests apart.
    pub fn new(tag: &str) -> Tmux {
        Tmux {
            socket: format!("kvtop-test-{tag}-{}", std::process::id()),
        }
    }

    /// Run a tmux command on this server; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Start `command` (a shell command line) in a `width`×`height` pane with `env` set and
    /// HOME and the XDG config, state, data and cache directories under `home`. After it exits the pane shows
    /// [`EXIT_LINE`] with its status and the tty modes, and stays open.
    pub fn start(&self, command: &str, width: u16, height: u16, home: &Path, env: &[(&str, &str)]) {
        let script = format!(
            "{command}; echo \"{EXIT_LINE} $?\"; \
             stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | sed 's/^/{TTY_PREFIX}/'; \
             sleep 600"
        );
        let home = home.display().to_string();
        let mut vars = vec![
            format!("HOME={home}"),
            format!("XDG_CONFIG_HOME={home}/config"),
            format!("XDG_STATE_HOME={home}/state"),
            format!("XDG_DATA_HOME={home}/data"),
            format!("XDG_CACHE_HOME={home}/cache"),
            "TERM=xterm-256color".to_owned(),
        ];
        vars.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["new-session", "-d", "-s", SESSION, "-x", &w, "-y", &h];
        for var in &vars {
            args.push("-e");
            args.push(var);
        }
        args.push(&script);
        self.run(&args);
    }

    /// The visible screen of the pane.
    pub fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", SESSION])
    }

    /// Send keys as `tmux send-keys` names them (`q`, `C-c`, `Escape`).
    pub fn send(&self, keys: &str) {
        self.run(&["send-keys", "-t", SESSION, keys]);
    }

    /// A pane format variable (`alternate_on`, `cursor_flag`, `pane_pid`).
    pub fn pane(&self, variable: &str) -> String {
        self.run(&[
            "display-message",
            "-p",
            "-t",
            SESSION,
            &format!("#{{{variable}}}"),
        ])
        .trim()
        .to_owned()
    }

    /// Poll the screen every `every` until `pred` holds or `deadline` passes (then panic with
    /// the screen); the last screen and how long it took.
    pub fn wait_every(
        &self,
        what: &str,
        deadline: Duration,
        every: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> (String, Duration) {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return (screen, start.elapsed());
            }
            assert!(
                start.elapsed() < deadline,
                "waited {deadline:?} for {what}; screen:\n{screen}"
            );
            std::thread::sleep(every);
        }
    }

    /// [`Tmux::wait_every`] at 100 ms; the last screen.
    pub fn wait_for(&self, what: &str, deadline: Duration, pred: impl Fn(&str) -> bool) -> String {
        self.wait_every(what, deadline, Duration::from_millis(100), pred)
            .0
    }

    /// Wait for kvtop to exit; its exit status as the shell printed it.
    pub fn wait_exit(&self, deadline: Duration) -> String {
        let screen = self.wait_for("kvtop to exit", deadline, |s| {
            s.lines().any(|l| l.starts_with(EXIT_LINE))
        });
        screen
            .lines()
            .find_map(|l| l.strip_prefix(EXIT_LINE))
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// The pid of the `kvtop` process the pane's shell started.
    pub fn kvtop_pid(&self) -> u32 {
        let shell: u32 = self.pane("pane_pid").parse().expect("pane pid");
        children_of(shell)
            .into_iter()
            .find(|pid| process_name(*pid).as_deref() == Some("kvtop"))
            .unwrap_or_else(|| panic!("no kvtop process under the pane's shell {shell}"))
    }

    /// After kvtop exited: the tty is in cooked mode with echo, the pane left the alternate
    /// screen and shows the cursor.
    pub fn assert_terminal_restored(&self) {
        // Both lines (canonical mode, echo): the pane may show the first before the second.
        let screen = self.wait_for("the tty modes", Duration::from_secs(5), |s| {
            s.matches(TTY_PREFIX).count() >= 2
        });
        let modes: Vec<&str> = screen
            .lines()
            .filter_map(|l| l.strip_prefix(TTY_PREFIX))
            .collect();
        assert!(
            modes.contains(&"icanon") && modes.contains(&"echo"),
            "tty left in raw mode: {modes:?}\n{screen}"
        );
        assert_eq!(
            self.pane("alternate_on"),
            "0",
            "still on the alternate screen:\n{screen}"
        );
        assert_eq!(self.pane("cursor_flag"), "1", "cursor hidden:\n{screen}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// Fields of /proc/PID/stat after the parenthesised command: state, ppid, ...
fn stat_fields(pid: u32) -> Option<(String, Vec<String>)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    Some((name, rest.split_whitespace().map(str::to_owned).collect()))
}

/// The command name of a live process.
pub fn process_name(pid: u32) -> Option<String> {
    stat_fields(pid).map(|(name, _)| name)
}

/// Whether a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|(_, fields)| fields.first().is_some_and(|s| s != "Z"))
}

/// The thread ids of a process.
pub fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The direct children of a process.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            stat_fields(*pid)
                .and_then(|(_, fields)| fields.get(1).and_then(|p| p.parse::<u32>().ok()))
                == Some(parent)
        })
        .collect()
}

/// A process and all its descendants.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while let Some(&pid) = all.get(i) {
        all.extend(children_of(pid));
        i += 1;
    }
    all
}
