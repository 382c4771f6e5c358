//! What subscribers hear of runs, as it happens.

use serde::Serialize;

use crate::protocol::Stream;
use crate::sessions::budget::BudgetSpend;
use crate::sessions::cost::NodeUsage;
use crate::status::Status;
use crate::timeline::StoppedBy;

/// What subscribers see of runs, as it happens. `t_ms` is milliseconds since the run started.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    RunStarted {
        run_id: String,
        session_id: String,
        pid: Option<u32>,
    },
    NodeBegin {
        run_id: String,
        node: String,
        /// Which execution of the run this is: its index in the run's timeline fold, the same in
        /// the `node_end` (or `node_discarded`) of this execution. (The live OTLP export finds
        /// an execution by it; the window goes by the node's name.)
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(skip))]
        execution: usize,
        depth: usize,
        t_ms: u64,
    },
    NodeEnd {
        run_id: String,
        node: String,
        /// The execution that ended (as its `node_begin` gave it).
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(skip))]
        execution: usize,
        status: Status,
        t_ms: u64,
        /// What the node's lines said it used, when they said (read from the run's output as it
        /// came: the live OTLP export's spans carry it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "ts", ts(skip))]
        usage: Option<Box<NodeUsage>>,
    },
    /// A `┌ title` line before the stream's first marker began a node, and the marker showed it
    /// was none: the `node_begin` it was heard as is taken back.
    NodeDiscarded {
        run_id: String,
        node: String,
        /// The execution taken back (as its `node_begin` gave it).
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(skip))]
        execution: usize,
    },
    /// Never sent to the window (it reads output from the store).
    #[cfg_attr(feature = "ts", ts(skip))]
    Output {
        run_id: String,
        stream: Stream,
        line: String,
        t_ms: u64,
    },
    /// A stop was asked for (what it is called is the window's and the CLI's to say).
    Stopping {
        run_id: String,
        forced: bool,
        /// Asked by another process (`zstudio stop`, another studio's window), which does the
        /// stopping.
        elsewhere: bool,
    },
    /// 80 % of the run's budget is spent (`budget.warning` in its log).
    BudgetWarning { run_id: String, spend: BudgetSpend },
    /// The run's budget is spent: a graceful stop was asked (`budget.reached`).
    BudgetReached { run_id: String, spend: BudgetSpend },
    /// Some of its nodes reported usage that cannot be priced: its budget in dollars does not
    /// hold them (`budget.unpriced`).
    BudgetUnpriced {
        run_id: String,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        nodes_priced: usize,
        #[cfg_attr(feature = "ts", ts(type = "number"))]
        nodes_with_usage: usize,
    },
    RunFinished {
        run_id: String,
        session_id: String,
        status: Status,
        exit_code: Option<i32>,
        elapsed_ms: u64,
        stopped_by: Option<StoppedBy>,
        error: Option<String>,
    },
}

impl RunEvent {
    pub fn run_id(&self) -> &str {
        match self {
            RunEvent::RunStarted { run_id, .. }
            | RunEvent::NodeBegin { run_id, .. }
            | RunEvent::NodeDiscarded { run_id, .. }
            | RunEvent::NodeEnd { run_id, .. }
            | RunEvent::Output { run_id, .. }
            | RunEvent::Stopping { run_id, .. }
            | RunEvent::BudgetWarning { run_id, .. }
            | RunEvent::BudgetReached { run_id, .. }
            | RunEvent::BudgetUnpriced { run_id, .. }
            | RunEvent::RunFinished { run_id, .. } => run_id,
        }
    }
}
