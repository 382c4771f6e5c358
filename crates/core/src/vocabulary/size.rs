//! A byte count as every surface shows it (issue 42.7: one formatter, where the CLI, the export's
//! messages and the window each had their own): in the largest binary unit it reaches, whole when
//! it is (`2 MiB`), else to a tenth (`1.5 MiB`); under 1 KiB in bytes (`12 B`). The window's
//! `bytesLabel` (ui/src/format.ts) follows the same rule. An option's value, which must read
//! back, is `studio_args::format_size`'s (`2G`).

/// `bytes` as people read it: `12 B`, `3.4 KiB`, `2 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let tenths = (value * 10.0).round() / 10.0;
    if unit == 0 || tenths.fract() == 0.0 {
        format!("{tenths:.0} {}", UNITS[unit])
    } else {
        format!("{tenths:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn whole_units_are_whole_and_others_to_a_tenth() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(3_482), "3.4 KiB");
        assert_eq!(human_bytes(2 << 20), "2 MiB");
        assert_eq!(human_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(human_bytes((2 << 20) - 1), "2 MiB");
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(5 << 40), "5 TiB");
        assert_eq!(human_bytes(3 << 50), "3072 TiB");
    }
}
