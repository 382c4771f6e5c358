//! The reader never panics and never loses bytes, whatever it is fed (a property test; the
//! coverage-guided fuzz target in `fuzz/` runs the same entry point).

use proptest::prelude::*;
use studio_core::protocol::{Stream, StreamReader};
use studio_core::timeline::{Exit, RunEnd, TimelineFold};

/// Pieces that make the reader's interesting paths likely: markers, bars, ANSI, broken UTF-8.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"__WORKFLOW_GRAPH_LOG__".to_vec()),
        Just(b"{\"phase\":\"node_begin\",\"node\":\"a\"}".to_vec()),
        Just(b"{\"phase\":\"node_end\",\"node\":\"a\"}".to_vec()),
        Just("│ ".as_bytes().to_vec()),
        Just("└ done 1ms".as_bytes().to_vec()),
        Just("└ failed".as_bytes().to_vec()),
        Just("◆ Workflow stopped externally".as_bytes().to_vec()),
        Just("◆ Session ".as_bytes().to_vec()),
        Just(b"\x1b[32m".to_vec()),
        Just(b"\x1b]".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(vec![0xe2, 0x94]),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_bytes_in_any_chunks_fold_without_panic(
        pieces in proptest::collection::vec(piece(), 0..60),
        cuts in proptest::collection::vec(1usize..64, 1..20),
        exit in -1i32..300,
    ) {
        let bytes: Vec<u8> = pieces.concat();
        let mut reader = StreamReader::new();
        let mut fold = TimelineFold::new();
        let mut text_bytes = 0usize;
        let mut lines = 0usize;
        let mut rest = &bytes[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].min(rest.len());
            let stream = if i % 5 == 4 { Stream::Stderr } else { Stream::Stdout };
            reader.push(stream, &rest[..n], i as u64, &mut |e| { lines += 1; text_bytes += e.text.len(); fold.apply(&e); });
            rest = &rest[n..];
            i += 1;
        }
        reader.finish(i as u64, &mut |e| { lines += 1; text_bytes += e.text.len(); fold.apply(&e); });
        let timeline = fold.timeline(Some(RunEnd { exit: Exit::from_shell_status(exit), signalled_by_studio: exit % 7 == 0 }));
        prop_assert!(timeline.nodes.iter().all(|n| n.ended_at_ms.is_none_or(|e| e >= n.started_at_ms)));
        // Every newline ends one line (a wrapped marker joins two lines into one).
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        prop_assert!(lines <= newlines + 2, "{lines} lines from {newlines} newlines");
        // A joined wrapped marker makes one line of two, never fewer.
        prop_assert!(2 * lines + 2 >= newlines, "{lines} lines from {newlines} newlines");
        prop_assert!(text_bytes <= 3 * bytes.len(), "no line is invented");
    }
}

#[test]
fn a_line_of_fifty_megabytes_is_one_output_line_cut_to_the_bound() {
    let mut big = vec![b'x'; 50 * 1024 * 1024];
    big.extend_from_slice(b"\n__WORKFLOW_GRAPH_LOG__{\"phase\":\"node_begin\",\"node\":\"after\"}\n");
    let mut reader = StreamReader::new();
    let mut events = Vec::new();
    for chunk in big.chunks(64 * 1024) {
        reader.push(Stream::Stdout, chunk, 0, &mut |e| events.push((e.text.len(), e.kind)));
    }
    reader.finish(0, &mut |e| events.push((e.text.len(), e.kind)));
    assert_eq!(events.len(), 2);
    // Issue 14: a line is kept up to MAX_LINE_BYTES, and says how much was cut.
    let marker = studio_core::protocol::cut_marker((50 * 1024 * 1024 - studio_core::protocol::MAX_LINE_BYTES) as u64);
    assert_eq!(events[0].0, studio_core::protocol::MAX_LINE_BYTES + marker.len());
    assert!(matches!(&events[1].1, studio_core::protocol::EventKind::NodeBegin { node, .. } if node == "after"));
}

/// Pieces of the agents' usage formats, cut and glued anyhow.
fn usage_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{\"type\":\"result\",".to_owned()),
        Just("\"total_cost_usd\":1e308,".to_owned()),
        Just("\"cost_usd\":-5,".to_owned()),
        Just("\"usage\":{\"input_tokens\":18446744073709551615,\"output_tokens\":-1},".to_owned()),
        Just("\"modelUsage\":{\"m\":{\"inputTokens\":1.5}},".to_owned()),
        Just("{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1,\"cached_input_tokens\":9}}".to_owned()),
        Just("{\"id\":\"0\",\"msg\":{\"type\":\"token_count\",\"info\":null}}".to_owned()),
        Just("\"stats\":{\"models\":{\"g\":{\"tokens\":{\"prompt\":1,\"cached\":5}}}}".to_owned()),
        Just("{\"type\":\"init\",\"model\":\"sonnet\"}".to_owned()),
        Just("\"session_id\":\"x\",\"duration_ms\":3}".to_owned()),
        Just("│ ".to_owned()),
        Just("\n".to_owned()),
        Just("}".to_owned()),
        "[ -~]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Whatever an agent printed, reading its usage never panics, and a cost is never negative
    /// or NaN.
    #[test]
    fn any_agent_output_reads_as_usage_or_none_without_panic(
        pieces in proptest::collection::vec(usage_piece(), 0..40),
        whole in any::<bool>(),
    ) {
        let text = pieces.concat();
        for usage in [
            studio_core::usage::read_raw_stream(&text, whole),
            studio_core::usage::read_node_output(text.lines()),
        ]
        .into_iter()
        .flatten()
        {
            let usage = studio_core::cost::NodeUsage::from_reported(usage);
            if let Some(cost) = usage.cost_usd {
                prop_assert!(cost.is_finite() && cost >= 0.0, "{usage:?}");
            }
        }
    }
}
