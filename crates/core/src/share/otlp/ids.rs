//! The ids of a run's trace, derived from what the run is: its trace from the run id (a session
//! the studio did not start: the session id), its root span from the same, a node execution's
//! span from the run, the node's name and which execution of that name it is. Exporting or
//! pushing the same run twice gives the same ids, so a backend keeps one copy of each span.

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

#[cfg(test)]
mod tests {
    use super::*;

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
