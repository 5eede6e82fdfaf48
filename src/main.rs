//! The `toolport` binary: the hidden helper commands first (before any runtime exists), then
//! the command line. All logic lives in the library.

use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a server's requests allocate and free many small
/// objects across threads, where glibc's arenas cost about a tenth of the CPU under load
/// (BENCHMARKS.md, HTTP load).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `arena_reserve` option (its index in `mi_option_t` of the mimalloc 3 that
/// libmimalloc-sys builds; the bindings name only the older options). A test checks that the
/// index is a size option.
const MI_OPTION_ARENA_RESERVE: libmimalloc_sys::mi_option_t = 23;

/// Sets mimalloc's arena reservation to its minimum (32 MiB) instead of 1 GiB, so the first
/// arena is 64 MiB (mimalloc adds room for one largest chunk object to any request). An
/// arena's bitmaps grow with its size, and the first allocation (made by the standard library
/// before `main`) writes them: for 1 GiB that is ~40 page faults and 0.2 MB of every start, for
/// a server whose heap is a few MiB. More arenas come as the heap grows (mimalloc doubles the
/// size of every 8th one), and `MIMALLOC_ARENA_RESERVE` in the environment still wins (this
/// sets the default).
///
/// It runs as an ELF constructor because `main` comes too late; it only writes mimalloc's
/// static option table and allocates nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static SMALL_FIRST_ARENA: extern "C" fn() = small_first_arena;

#[cfg(target_os = "linux")]
extern "C" fn small_first_arena() {
    // SAFETY: both calls read or write mimalloc's static tables only, which exist before any
    // constructor runs; neither allocates.
    #[allow(unsafe_code)]
    unsafe {
        let kib = libmimalloc_sys::mi_arena_min_size() / 1024;
        libmimalloc_sys::mi_option_set_default(
            MI_OPTION_ARENA_RESERVE,
            std::ffi::c_long::try_from(kib).unwrap_or(std::ffi::c_long::MAX),
        );
    }
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = toolport::hidden::dispatch(&argv) {
        return code;
    }
    toolport::cli::run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn mi_option_get_size(option: libmimalloc_sys::mi_option_t) -> usize;
    }

    /// The index names `arena_reserve`: `mi_option_get_size` reports only the options kept in
    /// KiB in bytes (indexes 9, 23, 44 and 45), so the neighbours of 23 would fail; and the
    /// constructor ran in this test binary too.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_arena_reservation_is_mimallocs_minimum() {
        if std::env::var_os("MIMALLOC_ARENA_RESERVE").is_some() {
            return;
        }
        // SAFETY: reads mimalloc's option table.
        #[allow(unsafe_code)]
        let (reserve, min) = unsafe {
            (
                mi_option_get_size(MI_OPTION_ARENA_RESERVE),
                libmimalloc_sys::mi_arena_min_size(),
            )
        };
        assert_eq!(reserve, min);
        assert_eq!(min, 32 << 20);
    }
}
