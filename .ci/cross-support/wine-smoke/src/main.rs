//! Wine smoke check for `.ci/cross`: start, use the standard library's random numbers, spawn
//! `cmd /c echo hi`, and print what it printed. Exits 1 if cmd failed or printed something else.

use std::collections::HashMap;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    // RandomState seeds from ProcessPrng (bcryptprimitives.dll) on Windows.
    let mut seen = HashMap::new();
    seen.insert("rust", 1);
    let out = match Command::new("cmd").args(["/c", "echo hi"]).output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("wine-smoke: could not spawn cmd: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    println!(
        "wine-smoke: cmd /c echo hi -> {:?} ({})",
        text.trim_end(),
        out.status
    );
    if out.status.success() && text.trim_end() == "hi" && seen.len() == 1 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
