//! How many executions of each node name a live run began: the names side by side in one
//! buffer, each name's count and hash in a list in the order first met, and a table of where
//! in that list each is, not a `String` a name (a run of 80,000 node names allocated and freed
//! 80,000 of them, and each lookup read the name through its own pointer). The table holds only
//! an index a name (4 bytes): a run of 80,000 different names keeps it a few hundred kB, written
//! at random, where entries of 24 bytes made it 3 MB; the list grows at its end.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// Executions begun, by node name.
#[derive(Default)]
pub(super) struct NameCounts {
    /// Every name counted, one after the other, in the order of `counted`.
    names: String,
    /// Each name's end in `names` (its start is the end of the one before), count and hash.
    counted: Vec<Counted>,
    /// Where each name is in `counted`.
    table: HashTable<u32>,
    /// Names come from the agent's output: a seeded quality hasher (foldhash, faster than
    /// SipHash on short names).
    hasher: foldhash::quality::RandomState,
}

struct Counted {
    /// Where its bytes end in [`NameCounts::names`].
    end: u32,
    count: u32,
    /// Its hash, kept for the table to grow without reading the names again.
    hash: u64,
}

impl NameCounts {
    /// Counts one more execution of `name`: which one it is (1-based).
    pub(super) fn began(&mut self, name: &str) -> u32 {
        let hash = self.hasher.hash_one(name);
        if let Some(at) = self.find(hash, name) {
            let counted = &mut self.counted[at];
            counted.count = counted.count.saturating_add(1);
            return counted.count;
        }
        self.names.push_str(name);
        let at = offset(self.counted.len());
        self.counted.push(Counted {
            end: offset(self.names.len()),
            count: 1,
            hash,
        });
        let counted = &self.counted;
        self.table.insert_unique(hash, at, |&at| counted[at as usize].hash);
        1
    }

    /// Counts one execution of `name` fewer (it was discarded), if any was counted.
    pub(super) fn discarded(&mut self, name: &str) {
        let hash = self.hasher.hash_one(name);
        if let Some(at) = self.find(hash, name) {
            let counted = &mut self.counted[at];
            counted.count = counted.count.saturating_sub(1);
        }
    }

    /// Where `name` (of `hash`) is in the list, if it was counted.
    fn find(&self, hash: u64, name: &str) -> Option<usize> {
        let (names, counted) = (&self.names, &self.counted);
        let name_at = |at: usize| {
            let start = at.checked_sub(1).map_or(0, |before| counted[before].end as usize);
            &names[start..counted[at].end as usize]
        };
        self.table
            .find(hash, |&at| name_at(at as usize) == name)
            .map(|&at| at as usize)
    }
}

/// A place in the names' buffer or the list (a run's names past 4 GiB in all are not a case to
/// count).
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
