//! Reading a variable from another process's environment as macOS gives it
//! (`sysctl(KERN_PROCARGS2)`): a pure parser, compiled on macOS and for the tests everywhere.
//!
//! The buffer holds `argc` (a native-endian `i32`), the executable's path, NUL padding, the
//! `argc` arguments, then the environment: every string NUL-terminated, the environment
//! ending at an empty string or at the end of the buffer.

/// The value of `var` in the environment part of a `KERN_PROCARGS2` buffer; `None` when the
/// variable is not there or the buffer is malformed.
pub(crate) fn env_var<'a>(buf: &'a [u8], var: &str) -> Option<&'a [u8]> {
    let argc_bytes: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    let argc = usize::try_from(i32::from_ne_bytes(argc_bytes)).ok()?;
    let rest = &buf[4..];
    // The executable's path, then the padding NULs before the first argument.
    let path_end = rest.iter().position(|b| *b == 0)?;
    let mut strings = rest[path_end..]
        .split(|b| *b == 0)
        .skip_while(|s| s.is_empty());
    for _ in 0..argc {
        strings.next()?;
    }
    strings
        .take_while(|entry| !entry.is_empty())
        .find_map(|entry| entry.strip_prefix(var.as_bytes())?.strip_prefix(b"="))
}

#[cfg(test)]
mod tests {
    use super::env_var;

    fn procargs(path: &str, args: &[&str], env: &[&str], padding: usize) -> Vec<u8> {
        let mut buf = i32::try_from(args.len()).unwrap().to_ne_bytes().to_vec();
        buf.extend_from_slice(path.as_bytes());
        buf.extend(std::iter::repeat_n(0, 1 + padding));
        for s in args.iter().chain(env) {
            buf.extend_from_slice(s.as_bytes());
            buf.push(0);
        }
        buf
    }

    #[test]
    fn finds_a_variable_after_the_arguments() {
        let buf = procargs(
            "/bin/sleep",
            &["sleep", "TOOLPORT_SCOPE=fake", "60"],
            &["HOME=/Users/a", "TOOLPORT_SCOPE=42:7", "X=1"],
            3,
        );
        // An argument that looks like the variable is not the environment.
        assert_eq!(env_var(&buf, "TOOLPORT_SCOPE"), Some(&b"42:7"[..]));
        assert_eq!(env_var(&buf, "X"), Some(&b"1"[..]));
        assert_eq!(env_var(&buf, "TOOLPORT"), None, "a prefix is not the name");
        assert_eq!(env_var(&buf, "MISSING"), None);
    }

    #[test]
    fn the_environment_ends_at_an_empty_string() {
        let mut buf = procargs("/bin/sh", &["sh"], &["A=1"], 0);
        buf.extend_from_slice(b"\0B=2\0");
        assert_eq!(env_var(&buf, "A"), Some(&b"1"[..]));
        assert_eq!(env_var(&buf, "B"), None);
    }

    #[test]
    fn malformed_buffers_give_nothing() {
        assert_eq!(env_var(b"", "A"), None);
        assert_eq!(env_var(&[1, 0, 0], "A"), None);
        // argc says more arguments than there are.
        let mut buf = 5i32.to_ne_bytes().to_vec();
        buf.extend_from_slice(b"/bin/x\0x\0A=1\0");
        assert_eq!(env_var(&buf, "A"), None);
        // A negative argc.
        let mut buf = (-1i32).to_ne_bytes().to_vec();
        buf.extend_from_slice(b"/bin/x\0A=1\0");
        assert_eq!(env_var(&buf, "A"), None);
    }
}
