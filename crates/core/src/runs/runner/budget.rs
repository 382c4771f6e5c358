//! A run's budget enforced ([`crate::sessions::budget`]): before it starts, the workspace's
//! spend today ([`workspace_spend_since`]) against its daily budget (refused with [`Error::BudgetExceeded`], unless asked to
//! go past it, which its log says); while it runs, its nodes' usage as they report it, at 80 %
//! of a limit `budget.warning`, at 100 % `budget.reached` and a graceful stop asked as Stop asks
//! it (the current node finishes, no later one starts; escalated past the agent's grace), usage
//! that cannot be priced `budget.unpriced`; each once, each heard by the run's subscribers too.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::events::RunEvent;
use super::follow::NodesBegan;
use super::followed::FollowedRun;
use super::request::RunRequest;
use super::shared::Shared;
use super::stopping::ask_to_stop;
use crate::sessions::budget::{BudgetNews, BudgetWatch};
use crate::sessions::cost::{dollars, OutputUsageReader, UsageTotal};
use crate::sessions::session::{Timestamp, Workspace};
use crate::store::{Level, Store};
use crate::vocabulary::error::Error;
use crate::vocabulary::launch::Budget;

/// What the workspace spent today, past its daily budget, when a run started anyway.
pub(super) struct OverBudget {
    spent_usd: f64,
    daily_usd: f64,
}

/// The start of today, local time (a day that starts in a gap of the clock: 24 h ago).
fn start_of_today() -> SystemTime {
    let now = chrono::Local::now();
    let midnight = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .and_then(|midnight| midnight.and_local_timezone(chrono::Local).earliest());
    midnight.map_or_else(|| SystemTime::now() - Duration::from_secs(24 * 3600), SystemTime::from)
}

/// What the workspace spent since `since`: its runs that started since (their priced cost: the
/// Cost column's), continued sessions included; and the sessions the studio did not start that it
/// has seen (its folder index) last updated since, each its whole priced cost.
pub fn workspace_spend_since(store: &Store, workspace: &Workspace, since: SystemTime) -> Result<f64, Error> {
    let runs = store.runs(workspace, None)?;
    let started_here: HashSet<String> = runs.iter().map(|run| run.session_id.clone()).collect();
    let mut today: Vec<_> = runs
        .into_iter()
        .filter(|run| run.started_at.to_system_time() >= since)
        .collect();
    store.with_runs_usage(workspace, &mut today, SystemTime::now())?;
    let seen = crate::store::index::indexed_summaries_since(store, workspace, Timestamp::from_system_time(since))?;
    let outside = seen
        .iter()
        .filter(|summary| !started_here.contains(summary.id.as_str()));
    let totals = today
        .iter()
        .map(|run| run.usage.as_ref())
        .chain(outside.map(|summary| summary.usage.as_ref()))
        .map(|total| (0, total));
    Ok(UsageTotal::sum(totals).and_then(|total| total.cost_usd).unwrap_or(0.0))
}

/// Refuses `request` when the workspace's spend today is at or past its daily budget, unless it
/// asks to go past it: then what was spent, for its log.
pub(super) fn check_daily_budget(shared: &Shared, request: &RunRequest) -> Result<Option<OverBudget>, Error> {
    let Some(daily_usd) = request.budget.daily_usd else {
        return Ok(None);
    };
    let spent_usd = workspace_spend_since(&shared.store, &request.workspace, start_of_today())?;
    if spent_usd < daily_usd {
        return Ok(None);
    }
    if request.over_budget {
        return Ok(Some(OverBudget { spent_usd, daily_usd }));
    }
    Err(Error::BudgetExceeded {
        spent: dollars(spent_usd),
        limit: dollars(daily_usd),
        day: chrono::Local::now().format("%Y-%m-%d").to_string(),
    })
}

/// Says in the run's log that it started past the daily budget, as asked.
pub(super) fn log_over_budget(store: &Store, run_id: &str, over: &OverBudget) {
    let logged = store.run_log(
        run_id,
        Level::Warn,
        "budget.over_budget",
        &format!(
            "started with --over-budget: the workspace spent {} today, its daily budget is {}",
            dollars(over.spent_usd),
            dollars(over.daily_usd)
        ),
        serde_json::json!({ "spent_usd": over.spent_usd, "daily_usd": over.daily_usd }),
        SystemTime::now(),
    );
    if let Err(error) = logged {
        tracing::error!(%run_id, %error, "cannot record a log line");
    }
}

impl FollowedRun {
    /// The watch of an adopted run: the limits it was started with, and what its log says was
    /// told already (a run whose budget was reached ends stopped by it, whoever settles it).
    pub(super) fn resume_budget(&self, budget: Budget, workspace: &Workspace) -> BudgetWatch {
        let told: Vec<String> = match self.shared.store.logs(workspace, &self.session_id) {
            Ok(logs) => logs
                .into_iter()
                .filter(|line| line.run_id.as_deref() == Some(self.run_id.as_str()))
                .map(|line| line.event)
                .collect(),
            Err(error) => {
                tracing::warn!(run_id = %self.run_id, %error, "cannot read an adopted run's log");
                Vec::new()
            }
        };
        let watch = BudgetWatch::resumed(budget, &told);
        if watch.reached() {
            self.live.stopped_by_budget.store(true, Ordering::SeqCst);
        }
        watch
    }

    /// Holds the run to its budget with what its nodes reported so far (`seen`: the usage
    /// reader's revision last looked at).
    pub(super) fn watch_budget(&self, watch: &mut BudgetWatch, usage: &OutputUsageReader, seen: &mut u64) {
        if !watch.has_limit() || usage.revision() == *seen {
            return;
        }
        *seen = usage.revision();
        let Some(total) = UsageTotal::of(usage.so_far().map(Some)) else {
            return;
        };
        for news in watch.observe(&total) {
            self.tell_budget_news(news);
        }
    }

    /// A node that began after the usage that reached the budget (after that line in the same
    /// chunk, or in any later chunk) raced the stop file: the engine looked for it before the
    /// studio wrote it. It is stopped at once, forced, rather than let run to its end: no node
    /// past the budget spends on (`budget.overrun` says which). Once per run (`stopped`).
    pub(super) fn stop_late_nodes(&self, reached_before: bool, began: &NodesBegan, stopped: &mut bool) {
        if *stopped || !self.live.stopped_by_budget.load(Ordering::SeqCst) {
            return;
        }
        let late = if reached_before { &began.all } else { &began.after_usage };
        let Some(first) = late.first() else {
            return;
        };
        *stopped = true;
        self.log(
            Level::Warn,
            "budget.overrun",
            &format!("node {first} began before the budget's stop was seen: stopping the run now"),
            serde_json::json!({ "nodes": late }),
        );
        if let Err(error) = ask_to_stop(&self.shared, &self.run_id, true) {
            tracing::error!(run_id = %self.run_id, %error, "cannot stop a run past its budget");
        }
    }

    fn tell_budget_news(&self, news: BudgetNews) {
        let run_id = self.run_id.clone();
        match news {
            BudgetNews::Unpriced {
                nodes_priced,
                nodes_with_usage,
            } => {
                self.log(
                    Level::Warn,
                    "budget.unpriced",
                    &format!(
                        "budget not enforced in dollars: {nodes_priced} of {nodes_with_usage} nodes priced \
                         (an agent that names no model cannot be priced; max_tokens limits it)"
                    ),
                    serde_json::json!({ "nodes_priced": nodes_priced, "nodes_with_usage": nodes_with_usage }),
                );
                self.shared.publish(RunEvent::BudgetUnpriced {
                    run_id,
                    nodes_priced,
                    nodes_with_usage,
                });
            }
            BudgetNews::Warning(spend) => {
                self.log(
                    Level::Warn,
                    "budget.warning",
                    &format!("{} spent: 80 % of the run's budget", spend.describe()),
                    serde_json::json!(spend),
                );
                self.shared.publish(RunEvent::BudgetWarning { run_id, spend });
            }
            BudgetNews::Reached(spend) => {
                self.live.stopped_by_budget.store(true, Ordering::SeqCst);
                self.log(
                    Level::Warn,
                    "budget.reached",
                    &format!(
                        "{} spent: the run's budget is reached; stopping after the current node",
                        spend.describe()
                    ),
                    serde_json::json!(spend),
                );
                self.shared.publish(RunEvent::BudgetReached {
                    run_id: run_id.clone(),
                    spend,
                });
                // A stop asked already (Stop pressed) goes on as it is: asking again would force it.
                if !self.live.stop.lock().expect("stop lock").is_requested() {
                    if let Err(error) = ask_to_stop(&self.shared, &run_id, false) {
                        tracing::error!(%run_id, %error, "cannot stop a run past its budget");
                    }
                }
            }
        }
    }
}
