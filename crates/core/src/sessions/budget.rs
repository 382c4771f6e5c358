//! Budgets: what a run may spend and what the workspace may spend a day (set in
//! `.zibby/studio.toml`, read with the agents), held to sane values as the file is
//! read ([`agent_problem`], [`usd_problem`]), and watched as a run's nodes report what they used
//! ([`BudgetWatch`]: at 80 % of a limit a warning, at 100 % the limit reached, each once; usage
//! that cannot be priced said once, never counted as $0).

use serde::Serialize;

use crate::sessions::cost::{dollars, UsageTotal};
use crate::vocabulary::launch::Budget;

/// A warning is given at this share of a limit.
pub const WARNING_SHARE: f64 = 0.8;

/// A budget in dollars is at most this (a typo's `5000000` is refused, not obeyed).
const MAX_USD: f64 = 1_000_000.0;

/// Why `usd` cannot be a budget in dollars, or `None`.
pub fn usd_problem(usd: f64) -> Option<String> {
    (!(usd.is_finite() && usd > 0.0 && usd <= MAX_USD))
        .then(|| format!("a budget is a number of US dollars above 0 and at most {MAX_USD}, not {usd}"))
}

/// The field of an agent's budget that cannot be, and why, or `None`.
pub fn agent_problem(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> Option<(&'static str, String)> {
    if let Some(problem) = max_cost_usd.and_then(usd_problem) {
        return Some(("max_cost_usd", problem));
    }
    (max_tokens == Some(0)).then(|| ("max_tokens", "a budget of tokens is above 0".to_owned()))
}

/// Where a run stands against its budget, as the run's log and its events say it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BudgetSpend {
    /// The priced cost of its nodes so far (a lower bound when some are not priced); `None`
    /// when none is priced.
    pub cost_usd: Option<f64>,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub tokens: u64,
    pub max_cost_usd: Option<f64>,
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub max_tokens: Option<u64>,
    /// The limit this is about: `max_cost_usd` or `max_tokens`.
    pub limit: String,
    /// What every surface shows of it: `$0.41 of $0.50`, `41,000 of 50,000 tokens`.
    pub label: String,
}

impl Eq for BudgetSpend {}

impl BudgetSpend {
    /// `$0.41 of $0.50` or `41,000 of 50,000 tokens` (its `label`).
    pub fn describe(&self) -> String {
        match (self.limit.as_str(), self.max_tokens) {
            ("max_tokens", Some(max)) => format!(
                "{} of {} tokens",
                crate::vocabulary::visible::thousands(self.tokens),
                crate::vocabulary::visible::thousands(max)
            ),
            _ => format!(
                "{} of {}",
                dollars(self.cost_usd.unwrap_or(0.0)),
                dollars(self.max_cost_usd.unwrap_or(0.0))
            ),
        }
    }
}

/// What watching a run's budget found, each once a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetNews {
    /// Some nodes reported usage with no price (Codex names no model): a limit in dollars cannot
    /// hold them.
    Unpriced {
        nodes_priced: usize,
        nodes_with_usage: usize,
    },
    /// [`WARNING_SHARE`] of a limit is spent.
    Warning(BudgetSpend),
    /// A limit is spent: the run is to stop at its next node.
    Reached(BudgetSpend),
}

/// A run's budget, watched as its nodes report what they used.
#[derive(Debug, Clone)]
pub struct BudgetWatch {
    budget: Budget,
    warned: bool,
    reached: bool,
    unpriced_said: bool,
}

impl BudgetWatch {
    pub fn new(budget: Budget) -> BudgetWatch {
        BudgetWatch {
            budget,
            warned: false,
            reached: false,
            unpriced_said: false,
        }
    }

    /// A watch of a run followed on by another studio process, told already what its log
    /// holds (`told`: the run's log events: `budget.warning`, `budget.reached`,
    /// `budget.unpriced`), so nothing is said twice.
    pub fn resumed(budget: Budget, told: &[String]) -> BudgetWatch {
        let said = |event: &str| told.iter().any(|told| told == event);
        BudgetWatch {
            budget,
            warned: said("budget.warning"),
            reached: said("budget.reached"),
            unpriced_said: said("budget.unpriced"),
        }
    }

    /// Whether the limit was reached (a stop was asked for it).
    pub fn reached(&self) -> bool {
        self.reached
    }

    /// Whether it has a limit to watch.
    pub fn has_limit(&self) -> bool {
        self.budget.max_cost_usd.is_some() || self.budget.max_tokens.is_some()
    }

    /// What `total` (the run's nodes so far) says that was not said yet.
    pub fn observe(&mut self, total: &UsageTotal) -> Vec<BudgetNews> {
        let mut news = Vec::new();
        if !self.has_limit() || self.reached {
            return news;
        }
        if self.budget.max_cost_usd.is_some() && total.nodes_priced < total.nodes_with_usage && !self.unpriced_said {
            self.unpriced_said = true;
            news.push(BudgetNews::Unpriced {
                nodes_priced: total.nodes_priced,
                nodes_with_usage: total.nodes_with_usage,
            });
        }
        let tokens = total.tokens.total();
        let cost_share = self
            .budget
            .max_cost_usd
            .zip(total.cost_usd)
            .map(|(max, cost)| cost / max);
        let token_share = self.budget.max_tokens.map(|max| tokens as f64 / max as f64);
        let (share, limit) = match (cost_share, token_share) {
            (Some(cost), Some(tokens)) if tokens > cost => (tokens, "max_tokens"),
            (Some(cost), _) => (cost, "max_cost_usd"),
            (None, Some(tokens)) => (tokens, "max_tokens"),
            (None, None) => return news,
        };
        let mut spend = BudgetSpend {
            cost_usd: total.cost_usd,
            tokens,
            max_cost_usd: self.budget.max_cost_usd,
            max_tokens: self.budget.max_tokens,
            limit: limit.to_owned(),
            label: String::new(),
        };
        spend.label = spend.describe();
        if share >= WARNING_SHARE && !self.warned {
            self.warned = true;
            news.push(BudgetNews::Warning(spend.clone()));
        }
        if share >= 1.0 {
            self.reached = true;
            news.push(BudgetNews::Reached(spend));
        }
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::cost::NodeUsage;
    use studio_protocol::usage::{ModelTokens, ReportedUsage, Tokens, UsageFormat};

    fn node(cost: Option<f64>, tokens: u64) -> NodeUsage {
        let tokens = Tokens {
            input: tokens,
            ..Tokens::default()
        };
        NodeUsage::from_reported(ReportedUsage {
            format: if cost.is_some() {
                UsageFormat::ClaudeCode
            } else {
                UsageFormat::Codex
            },
            tokens: Some(tokens),
            models: cost
                .map(|_| ModelTokens {
                    model: "claude-sonnet-4-5".into(),
                    tokens,
                    reported_cost_usd: None,
                })
                .into_iter()
                .collect(),
            turns: None,
            duration_ms: None,
            reported_cost_usd: cost,
            results_seen: 1,
        })
    }

    fn total(nodes: &[NodeUsage]) -> UsageTotal {
        UsageTotal::of(nodes.iter().map(Some)).unwrap()
    }

    #[test]
    fn a_warning_then_the_limit_each_once() {
        let mut watch = BudgetWatch::new(Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        });
        assert!(watch.observe(&total(&[node(Some(0.5), 10)])).is_empty());
        let news = watch.observe(&total(&[node(Some(0.5), 10), node(Some(0.3), 10)]));
        assert!(
            matches!(&news[..], [BudgetNews::Warning(spend)] if spend.describe() == "$0.8000 of $1.00"),
            "{news:?}"
        );
        assert!(watch
            .observe(&total(&[node(Some(0.5), 10), node(Some(0.35), 10)]))
            .is_empty());
        let news = watch.observe(&total(&[node(Some(0.5), 10), node(Some(0.6), 10)]));
        assert!(matches!(&news[..], [BudgetNews::Reached(_)]), "{news:?}");
        assert!(watch.observe(&total(&[node(Some(5.0), 10)])).is_empty());
    }

    #[test]
    fn unpriced_usage_is_said_once_and_never_counted_as_nothing_spent() {
        let mut watch = BudgetWatch::new(Budget {
            max_cost_usd: Some(1.0),
            max_tokens: Some(100),
            ..Budget::default()
        });
        let news = watch.observe(&total(&[node(None, 50)]));
        assert_eq!(
            news,
            [BudgetNews::Unpriced {
                nodes_priced: 0,
                nodes_with_usage: 1
            }]
        );
        let news = watch.observe(&total(&[node(None, 50), node(None, 60)]));
        assert!(
            matches!(&news[..], [BudgetNews::Warning(w), BudgetNews::Reached(r)] if w.limit == "max_tokens" && r.describe() == "110 of 100 tokens"),
            "{news:?}"
        );
    }

    #[test]
    fn a_bad_budget_names_its_field() {
        assert_eq!(agent_problem(Some(0.5), Some(10)), None);
        assert_eq!(agent_problem(Some(-1.0), None).unwrap().0, "max_cost_usd");
        assert_eq!(agent_problem(Some(f64::NAN), None).unwrap().0, "max_cost_usd");
        assert_eq!(agent_problem(None, Some(0)).unwrap().0, "max_tokens");
        assert!(usd_problem(0.0).is_some() && usd_problem(20.0).is_none());
    }
}
