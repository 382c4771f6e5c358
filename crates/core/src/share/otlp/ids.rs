//! The ids of a run's trace, derived from what the run is: its trace from the run id (a session
//! the studio did not start: the session id), its root span from the same, a node execution's
//! span from the run, the node's name and which execution of that name it is. Exporting or
//! pushing the same run twice gives the same ids, so a backend keeps one copy of each span.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// The first `N` bytes of SHA-256 over the parts, each ended by a NUL (so `a`+`bc` and `ab`+`c`
/// differ); an all-zero id is invalid in OTLP, so its last byte is made 1 then (2^-64 odds).
fn derived<const N: usize>(kind: &str, parts: &[&str]) -> [u8; N] {
    let mut hasher = Sha256::new();
    hasher.update(b"zibby-studio/otlp/");
    hasher.update(kind.as_bytes());
    for part in parts {
        hasher.update([0]);
        hasher.update(part.as_bytes());
    }
    id_of(hasher)
}

/// The id a hasher fed its message gives.
fn id_of<const N: usize>(hasher: Sha256) -> [u8; N] {
    let digest = hasher.finalize();
    let mut id = [0u8; N];
    id.copy_from_slice(&digest[..N]);
    if id.iter().all(|&b| b == 0) {
        id[N - 1] = 1;
    }
    id
}

/// The trace of a run (`key`: its run id, or the session id of a session the studio did not run).
pub fn trace_id(key: &str) -> [u8; 16] {
    derived("trace", &[key])
}

/// The run's own span, the root of its trace.
pub fn run_span_id(key: &str) -> [u8; 8] {
    derived("run", &[key])
}

/// The span of the `occurrence`-th execution (1-based) of node `name` in the run.
pub fn node_span_id(key: &str, name: &str, occurrence: u32) -> [u8; 8] {
    let mut digits = itoa::Buffer::new();
    derived("node", &[key, name, digits.format(occurrence)])
}

/// The node span ids of one run ([`node_span_id`]'s, the same), computed with what they share
/// hashed once: the message's beginning of the run (its kind and key), and, when the node's part
/// ends SHA-256's first 64-byte block within 8 bytes (a run id's key leaves 4), the state past
/// that block by those bytes (a few thousand kept): one compression an id, not two.
pub(super) struct NodeSpanIds {
    /// Fed `zibby-studio/otlp/node`, NUL, the key, NUL.
    run: Sha256,
    /// The bytes of the node's part that end the first block (none: the run's beginning ends
    /// it, or leaves more than 8 bytes of it).
    first_block_rest: Option<usize>,
    first_blocks: HashMap<u64, Sha256, foldhash::fast::FixedState>,
}

/// The first blocks kept by a run, at most.
const FIRST_BLOCKS: usize = 4096;

impl NodeSpanIds {
    pub(super) fn of_run(key: &str) -> NodeSpanIds {
        let mut run = Sha256::new();
        let beginning: [&[u8]; 3] = [b"zibby-studio/otlp/node\0", key.as_bytes(), b"\0"];
        for part in beginning {
            run.update(part);
        }
        let fed = "zibby-studio/otlp/node".len() + 1 + key.len() + 1;
        NodeSpanIds {
            run,
            first_block_rest: 64usize.checked_sub(fed).filter(|rest| (1..=8).contains(rest)),
            first_blocks: HashMap::default(),
        }
    }

    /// [`node_span_id`] of the run's `occurrence`-th execution of `name`.
    pub(super) fn node(&mut self, name: &str, occurrence: u32) -> [u8; 8] {
        // Its decimal digits written on the stack (std's formatting costs several times more).
        let mut digits = itoa::Buffer::new();
        let parts: [&[u8]; 3] = [name.as_bytes(), b"\0", digits.format(occurrence).as_bytes()];
        let len = parts.iter().map(|part| part.len()).sum::<usize>();
        let Some(rest) = self.first_block_rest.filter(|&rest| len > rest) else {
            let mut hasher = self.run.clone();
            parts.iter().for_each(|part| hasher.update(part));
            return id_of(hasher);
        };
        let mut first = [0u8; 8];
        let mut bytes = parts.iter().flat_map(|part| part.iter().copied());
        first[..rest]
            .iter_mut()
            .zip(&mut bytes)
            .for_each(|(to, from)| *to = from);
        let key = u64::from_le_bytes(first);
        let mut hasher = match self.first_blocks.get(&key) {
            Some(past_first) => past_first.clone(),
            None => {
                let mut past_first = self.run.clone();
                past_first.update(&first[..rest]);
                if self.first_blocks.len() < FIRST_BLOCKS {
                    self.first_blocks.insert(key, past_first.clone());
                }
                past_first
            }
        };
        let mut skip = rest;
        for part in parts {
            let from = skip.min(part.len());
            hasher.update(&part[from..]);
            skip -= from;
        }
        id_of(hasher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's ids computed from its shared beginning and first blocks are `node_span_id`'s:
    /// keys that leave the first block to 1 to 8 bytes of the node's part, or to more, or none;
    /// names shorter than those bytes, longer, met again (a first block kept) and not.
    #[test]
    fn a_runs_node_span_ids_are_those_computed_alone() {
        let keys = [
            "0194c7a2-6f1e-7c3b-9a2d-5e8f1b3c4d6a".to_owned(),
            "r1".to_owned(),
            "k".repeat(32),
            "k".repeat(33),
            "k".repeat(39),
            "k".repeat(40),
            "k".repeat(41),
            "k".repeat(100),
        ];
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "n1",
            "n12",
            "n123",
            "n1234",
            "plan",
            "search-the-web",
        ];
        for key in &keys {
            let mut ids = NodeSpanIds::of_run(key);
            for round in 0..2 {
                for name in names {
                    for occurrence in [1, 2, 10, 4_294_967_295] {
                        let alone = node_span_id(key, name, occurrence);
                        assert_eq!(ids.node(name, occurrence), alone, "{key} {name} {occurrence} {round}");
                    }
                }
            }
        }
    }

    #[test]
    fn ids_are_stable_and_tell_runs_nodes_and_executions_apart() {
        assert_eq!(trace_id("r1"), trace_id("r1"));
        assert_ne!(trace_id("r1"), trace_id("r2"));
        assert_ne!(run_span_id("r1"), node_span_id("r1", "", 1));
        assert_ne!(node_span_id("r1", "plan", 1), node_span_id("r1", "plan", 2));
        assert_ne!(node_span_id("r1", "a", 11), node_span_id("r1", "a1", 1));
        // The occurrence as its decimal digits (the ids `otlp push` has always given).
        for occurrence in [0, 1, 9, 10, 4_294_967_295] {
            let text = occurrence.to_string();
            assert_eq!(
                node_span_id("r1", "a", occurrence),
                derived::<8>("node", &["r1", "a", &text])
            );
        }
    }
}
