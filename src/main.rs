//! The `toolport` binary: the hidden helper commands first (before any runtime exists), then
//! the command line. All logic lives in the library.

use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a server's requests allocate and free many small
/// objects across threads, where glibc's arenas cost about a tenth of the CPU under load
/// (`git show a29830c:BENCHMARKS.md`, "HTTP load", "What got it there").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = toolport_tools::dispatch_helper(&argv) {
        return code;
    }
    toolport::cli::run()
}
