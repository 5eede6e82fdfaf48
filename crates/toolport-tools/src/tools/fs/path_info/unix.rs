//! Unix: the permission bits of a path, ls style and octal.

/// The permission bits kept (rwx for all, setuid/setgid/sticky).
const MODE_BITS: u32 = 0o7777;

/// `("rw-r--r--", "0644")`.
pub(super) fn permissions(meta: &cap_std::fs::Metadata) -> Option<(String, String)> {
    use cap_std::fs::PermissionsExt;
    let mode = meta.permissions().mode() & MODE_BITS;
    Some((ls_mode(mode), format!("{mode:04o}")))
}

fn ls_mode(mode: u32) -> String {
    let bits = [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o040, 'r'),
        (0o020, 'w'),
        (0o010, 'x'),
        (0o004, 'r'),
        (0o002, 'w'),
        (0o001, 'x'),
    ];
    bits.iter()
        .map(|&(bit, c)| if mode & bit != 0 { c } else { '-' })
        .collect()
}
