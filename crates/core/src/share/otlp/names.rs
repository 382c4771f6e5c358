//! How many executions of each node name a live run began: the names side by side in one
//! buffer and a table of where each is and its count, not a `String` a name (a run of 80,000
//! node names allocated and freed 80,000 of them, and each lookup read the name through its
//! own pointer).

use std::hash::BuildHasher;
use std::ops::Range;

use hashbrown::HashTable;

/// Executions begun, by node name.
#[derive(Default)]
pub(super) struct NameCounts {
    /// Every name counted, one after the other.
    names: String,
    /// Where each name is in `names`, and its count.
    table: HashTable<Counted>,
    /// Names come from the agent's output: a seeded quality hasher (foldhash, faster than
    /// SipHash on short names).
    hasher: foldhash::quality::RandomState,
}

struct Counted {
    /// Its bytes in [`NameCounts::names`].
    at: Range<u32>,
    count: u32,
    /// Its hash, kept for the table to grow without reading the names again.
    hash: u64,
}

impl NameCounts {
    /// Counts one more execution of `name`: which one it is (1-based).
    pub(super) fn began(&mut self, name: &str) -> u32 {
        let hash = self.hasher.hash_one(name);
        let names = &mut self.names;
        if let Some(counted) = self.table.find_mut(hash, |c| names_at(names, &c.at) == name) {
            counted.count = counted.count.saturating_add(1);
            return counted.count;
        }
        let at = offset(names.len())..offset(names.len() + name.len());
        names.push_str(name);
        let counted = Counted { at, count: 1, hash };
        self.table.insert_unique(hash, counted, |c| c.hash);
        1
    }

    /// Counts one execution of `name` fewer (it was discarded), if any was counted.
    pub(super) fn discarded(&mut self, name: &str) {
        let hash = self.hasher.hash_one(name);
        let names = &self.names;
        if let Some(counted) = self.table.find_mut(hash, |c| names_at(names, &c.at) == name) {
            counted.count = counted.count.saturating_sub(1);
        }
    }
}

fn names_at<'n>(names: &'n str, at: &Range<u32>) -> &'n str {
    &names[at.start as usize..at.end as usize]
}

/// A place in the names' buffer (a run's names past 4 GiB in all are not a case to count).
fn offset(at: usize) -> u32 {
    u32::try_from(at).expect("node names of a run under 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_counted_apart_and_a_discarded_execution_uncounted() {
        let mut counts = NameCounts::default();
        assert_eq!(counts.began("plan"), 1);
        assert_eq!(counts.began("search"), 1);
        assert_eq!(counts.began("plan"), 2);
        // A name that is the start or the end of another is another name.
        assert_eq!(counts.began("pla"), 1);
        assert_eq!(counts.began("lan"), 1);
        assert_eq!(counts.began(""), 1);
        counts.discarded("plan");
        assert_eq!(counts.began("plan"), 2);
        counts.discarded("never");
        assert_eq!(counts.began("never"), 1);
        // Many names: the table grows, each count kept.
        for i in 0..10_000 {
            assert_eq!(counts.began(&format!("n{i}")), 1);
        }
        for i in (0..10_000).step_by(7) {
            assert_eq!(counts.began(&format!("n{i}")), 2);
        }
        assert_eq!(counts.began("search"), 2);
    }
}
