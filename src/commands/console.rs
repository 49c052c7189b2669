//! Starting the live console: fleet, scrape workers, terminal, event loop, and giving the
//! terminal back on every exit path.

use std::process::ExitCode;

use tokio::sync::mpsc;

use crate::app::run::{ExitReason, run};
use crate::app::state::App;
use crate::config::{Config, TargetConfig};
use crate::fleet::Fleet;
use crate::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use crate::theme::Theme;

/// Queue between the scrape workers and the event loop. Workers wait when it is full, which
/// only happens if the loop falls behind by this many results.
const EVENT_QUEUE: usize = 8192;

/// Run the console on `targets` until the user quits. `notices` are shown in the footer
/// (e.g. a config file problem that was worked around).
pub async fn run_console(
    config: &Config,
    theme: Theme,
    targets: &[TargetConfig],
    source: String,
    notices: Vec<String>,
) -> ExitCode {
    let settings = ScrapeSettings {
        interval: config.interval,
        timeout: config.timeout,
        body_limit: config.body_limit,
        user_agent: config.user_agent.clone(),
    };
    let client = match build_client(&settings) {
        Ok(client) => client,
        Err(err) => {
            eprintln!("kvtop: cannot create the HTTP client: {err}");
            return ExitCode::from(1);
        }
    };
    let mut fleet = Fleet::new(config.fleet_settings());
    let scrape_targets: Vec<ScrapeTarget> = targets
        .iter()
        .map(|t| ScrapeTarget {
            id: fleet.add_target(t.spec()),
            url: t.url.clone(),
            bearer_token: t.bearer_token.clone(),
        })
        .collect();
    let mut app = App::new(fleet, theme, source, config.interval, config.range);
    let now = crate::clock::unix_now();
    for notice in notices {
        app.warn(notice, now);
    }
    app.load_user_rules(config.user_rules_path().as_deref(), now);
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let _scrapers = Scrapers::start(client, settings, scrape_targets, tx);

    let mut terminal = match crate::terminal::enter() {
        Ok(t) => t,
        Err(err) => {
            eprintln!("kvtop: cannot take over the terminal: {err}");
            return ExitCode::from(1);
        }
    };
    let result = run(&mut app, &mut terminal, rx, config.max_fps).await;
    drop(terminal);
    crate::terminal::restore();
    match result {
        Ok(reason) => {
            tracing::info!(?reason, "console stopped");
            match reason {
                ExitReason::User | ExitReason::Terminated | ExitReason::InputClosed => {
                    ExitCode::SUCCESS
                }
                // The terminal is gone; the exit status follows the shell convention.
                ExitReason::HangUp => ExitCode::from(129),
            }
        }
        Err(err) => {
            eprintln!("kvtop: terminal error: {err}");
            ExitCode::from(1)
        }
    }
}
