//! A count that goes on growing (events or spans lost) said in the log at most so often: the
//! first time at once, then at most once every spell, with what was added since it was last said.
//! A loss that goes on at every publication would otherwise write a line each, from the thread
//! that is busiest.

use std::time::{Duration, Instant};

/// When a growing count was last said, and what it was then.
#[derive(Debug, Clone, Copy)]
pub struct SaidAtMostEvery {
    every: Duration,
    last: Option<(Instant, u64)>,
}

impl SaidAtMostEvery {
    pub const fn new(every: Duration) -> SaidAtMostEvery {
        SaidAtMostEvery { every, last: None }
    }

    /// With the count at `total` at `now`: what to say now (what was added since it was last
    /// said), when it grew and it was never said, or not within the last spell.
    pub fn due(&mut self, now: Instant, total: u64) -> Option<u64> {
        let said = match self.last {
            Some((_, said)) if total <= said => return None,
            Some((at, _)) if now.duration_since(at) < self.every => return None,
            Some((_, said)) => said,
            None if total == 0 => return None,
            None => 0,
        };
        self.last = Some((now, total));
        Some(total - said)
    }

    pub fn every(&self) -> Duration {
        self.every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_said_at_once_then_at_most_every_spell_with_what_was_added() {
        let mut said = SaidAtMostEvery::new(Duration::from_secs(10));
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(said.due(at(0), 0), None, "nothing to say");
        assert_eq!(said.due(at(0), 3), Some(3), "the first at once");
        assert_eq!(said.due(at(1), 50), None);
        assert_eq!(said.due(at(9), 900), None);
        assert_eq!(said.due(at(10), 1_000), Some(997), "what was added, a spell later");
        assert_eq!(said.due(at(30), 1_000), None, "nothing added: nothing said");
        assert_eq!(said.due(at(31), 1_004), Some(4), "added after a quiet spell: at once");
        assert_eq!(said.due(at(32), 1_005), None);
    }
}
