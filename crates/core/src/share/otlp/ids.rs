//! The ids of a run's trace, derived from what the run is: its trace from the run id (a session
//! the studio did not start: the session id), its root span from the same, a node execution's
//! span from the run, the node's name and which execution of that name it is. Exporting or
//! pushing the same run twice gives the same ids, so a backend keeps one copy of each span.
//! SHA-256 (not a faster hash): an agent names its nodes, and must not be able to make a span
//! id another run's spans will have.

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
    first_bytes(&hasher.finalize())
}

/// The first `N` bytes of `digest`, the last made 1 when all are zero.
fn first_bytes<const N: usize>(digest: &[u8]) -> [u8; N] {
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

/// A run's ids, derived once a run: its trace's, its own span's, and its node executions'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunIds {
    pub trace: [u8; 16],
    /// The run's own span, the root of its trace.
    pub root_span: [u8; 8],
    pub nodes: NodeSpanIds,
}

impl RunIds {
    /// The ids of the run keyed `key` (its run id, or the session id of a session the studio
    /// did not run).
    pub fn of_run(key: &str) -> RunIds {
        RunIds {
            trace: trace_id(key),
            root_span: run_span_id(key),
            nodes: NodeSpanIds::of_run(key),
        }
    }
}

/// The span ids of one run's node executions. Each is the first 8 bytes of SHA-256 over the
/// run's node key (16 bytes derived from the run's key, once a run), the node's name and which
/// execution of that name it is: one 64-byte block of SHA-256 for a name of up to 37 bytes,
/// where the run's key hashed again with each took two (in a live export of a flood, SHA-256
/// was a sixth of the export's reader). Since session 31; the ids before it were SHA-256 over
/// the run's key, the name and the execution together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSpanIds {
    key: [u8; 16],
}

impl NodeSpanIds {
    /// The node span ids of the run keyed `key`.
    pub fn of_run(key: &str) -> NodeSpanIds {
        NodeSpanIds {
            key: derived("node", &[key]),
        }
    }

    /// The span of the `occurrence`-th execution (1-based) of node `name` in the run: over the
    /// run's node key, the name, a NUL and the occurrence's decimal digits (which hold no NUL,
    /// so no other name and occurrence give the same bytes).
    pub fn span_id(&self, name: &str, occurrence: u32) -> [u8; 8] {
        let mut digits = itoa::Buffer::new();
        let mut hasher = Sha256::new();
        hasher.update(self.key);
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(digits.format(occurrence).as_bytes());
        first_bytes(&hasher.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_tell_runs_nodes_and_executions_apart() {
        let r1 = NodeSpanIds::of_run("r1");
        assert_eq!(trace_id("r1"), trace_id("r1"));
        assert_ne!(trace_id("r1"), trace_id("r2"));
        assert_eq!(r1.span_id("plan", 1), NodeSpanIds::of_run("r1").span_id("plan", 1));
        assert_ne!(r1.span_id("plan", 1), NodeSpanIds::of_run("r2").span_id("plan", 1));
        assert_ne!(run_span_id("r1")[..], r1.span_id("", 1)[..]);
        assert_ne!(r1.span_id("plan", 1), r1.span_id("plan", 2));
        assert_ne!(r1.span_id("a", 11), r1.span_id("a1", 1));
        // Pinned: a backend keeps what it was given, so these ids never change unsaid. (Worked
        // out apart, with Python's hashlib: sha256(b"zibby-studio/otlp/trace\0r1"), of "run"
        // likewise, and sha256(sha256(b"zibby-studio/otlp/node\0r1")[:16] + b"plan\x002").)
        assert_eq!(hex(&trace_id("r1")), "81c987f1d7ce3f049beade900e27c421");
        assert_eq!(hex(&run_span_id("r1")), "f8c76e9c26db89ab");
        assert_eq!(hex(&r1.span_id("plan", 2)), "70a09a297f7c93e3");
        // The occurrence as its decimal digits, after the name and a NUL, over the run's node key.
        for (name, occurrence) in [("a", 0), ("a", 1), ("a", 9), ("", 10), ("a\0", 1), ("b", 4_294_967_295)] {
            let mut bytes = derived::<16>("node", &["r1"]).to_vec();
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(occurrence.to_string().as_bytes());
            assert_eq!(r1.span_id(name, occurrence), first_bytes::<8>(&Sha256::digest(&bytes)));
        }
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
