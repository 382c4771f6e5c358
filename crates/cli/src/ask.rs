//! Questions on the terminal (stderr and stdin); without a terminal nothing is asked.

use std::io::{IsTerminal, Write};

/// Asks on the terminal; without one, the answer is no (pass --yes).
pub fn confirm(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("{question} Not asked: no terminal; pass --yes to confirm");
    }
    let mut err = std::io::stderr().lock();
    write!(err, "{question} [y/N] ")?;
    err.flush()?;
    drop(err);
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
