//! The bench binary's own command line: whether it runs as a benchmark or as criterion's
//! smoke test, and which sections a filter selects (for the parts that are not criterion
//! benchmarks, which criterion's own filtering does not reach).

/// Options of criterion's command line that take a value (so the value is not a filter).
const VALUE_OPTIONS: &[&str] = &[
    "--save-baseline",
    "-s",
    "--baseline",
    "-b",
    "--baseline-lenient",
    "--load-baseline",
    "--color",
    "-c",
    "--profile-time",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--plotting-backend",
    "--output-format",
    "--format",
];

/// The positional (filter) arguments on the command line.
pub(crate) fn filters() -> Vec<String> {
    let mut out = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if VALUE_OPTIONS.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            out.push(arg);
        }
    }
    out
}

/// Whether the section named `section` runs: when there is no filter, or a filter names the
/// section or something inside it (`plugin_call/plugin_echo_via_registry` selects
/// `plugin_call`).
pub(crate) fn wants(section: &str) -> bool {
    let filters = filters();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| section.contains(f.as_str()) || f.contains(section))
}

/// `cargo bench` passes `--bench`; `cargo test --benches` (criterion's test mode, one run of
/// each benchmark as a smoke test) does not.
pub(crate) fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}
