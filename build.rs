//! Link settings for the release binary on x86_64 Linux (glibc): a start-up link order and
//! packed relative relocations. Both change only where the linker puts things, never what the
//! program does; any other target, or a debug build, links as cargo would by default.
//!
//! Why: a 24 MB position-independent binary pays at start-up for what the kernel and the
//! dynamic loader touch (BENCHMARKS.md, "What changed in this issue, and what is left").
//! - **Link order** (`link/startup.order`, lld's `--symbol-ordering-file`): the ~2,000
//!   functions that run from `exec` to the first answers are scattered over a 16 MB text
//!   section, and each page fault there maps the 64 KiB around it, so start-up touched ~150
//!   windows (≈ 9 MB of resident text). Placed together they fill ~45. The list is made
//!   by `link/order.py` from a callgrind run of the release binary, and is exact only for the
//!   code it was recorded from (fat LTO renames and re-inlines after any change: re-record it
//!   as the last step of a change, ARCHITECTURE.md); names that no longer exist are skipped
//!   (no warning), so a stale list costs memory, never correctness.
//! - **Packed relative relocations** (`-z pack-relative-relocs`, DT_RELR, glibc ≥ 2.36): the
//!   41,000 relative relocations of a PIE take 1 MB as RELA entries, which the loader reads at
//!   every start; as RELR they take a few KiB. The binary stays position-independent (ASLR).
//!
//! Rust ≥ 1.90 links x86_64-unknown-linux-gnu with its bundled lld, which takes both flags;
//! an older rustc (GNU ld by default) or a build that picks its own linker (`-C linker`,
//! `-fuse-ld` in RUSTFLAGS) links plainly, as does `TOOLPORT_PLAIN_LINK=1`.

// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;

/// The target both settings are made for (lld by default, glibc).
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The glibc that first reads DT_RELR (older loaders refuse such a binary).
const RELR_GLIBC: (u32, u32) = (2, 36);
/// The first Rust release that links this target with its own lld by default.
const LLD_DEFAULT_SINCE: (u32, u32) = (1, 90);
/// The start-up order, relative to the package root.
const ORDER_FILE: &str = "link/startup.order";

fn main() {
    println!("cargo::rerun-if-changed={ORDER_FILE}");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=TOOLPORT_PLAIN_LINK");
    let target = std::env::var("TARGET").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = flags.contains("linker") || flags.contains("fuse-ld");
    if target != TARGET
        || profile != "release"
        || own_linker
        || std::env::var_os("TOOLPORT_PLAIN_LINK").is_some()
        || rustc().is_none_or(|v| v < LLD_DEFAULT_SINCE)
    {
        return;
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&root).join(ORDER_FILE);
    if order.is_file() {
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    if glibc().is_some_and(|v| v >= RELR_GLIBC) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc version (`getconf GNU_LIBC_VERSION` says `glibc 2.36`).
fn glibc() -> Option<(u32, u32)> {
    version(Command::new("getconf").arg("GNU_LIBC_VERSION"), "glibc ")
}

/// The compiler's version (`rustc --version` says `rustc 1.95.0 (…)`).
fn rustc() -> Option<(u32, u32)> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    version(Command::new(rustc).arg("--version"), "rustc ")
}

/// `major.minor` from the first line a command prints after `prefix`.
fn version(command: &mut Command, prefix: &str) -> Option<(u32, u32)> {
    let out = command.output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix(prefix)?;
    let mut parts = version.split(['.', ' ', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
