//! A command's output as text on Windows. Console programs write in the console's code page,
//! which is the OEM code page (437, 850, 866, 932 …) for the hidden console a windowless
//! command gets, not UTF-8: such bytes are decoded from that code page with the system's own
//! tables (`MultiByteToWideChar`, which knows every code page Windows has — encoding_rs lacks
//! the DOS ones, 437 and 850, that most Western systems use). Output that is valid UTF-8 is
//! taken as it is, so programs that write UTF-8 (most cross-platform tools, and Python with
//! `PYTHONUTF8=1`, which commands get) are never decoded twice.
//!
//! What is not certain: a program that writes the ANSI code page (1252 …) to a pipe is read as
//! OEM; the two agree on ASCII and differ on accented letters.

use std::borrow::Cow;

use windows_sys::Win32::Globalization::{GetOEMCP, MultiByteToWideChar};

/// The UTF-8 code page.
const CP_UTF8: u32 = 65001;

/// `bytes` as text: UTF-8 when it is, else decoded from the OEM code page (invalid sequences
/// become U+FFFD).
pub(crate) fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(text);
    }
    // SAFETY: no arguments; returns the system's OEM code page identifier.
    #[allow(unsafe_code)]
    let code_page = unsafe { GetOEMCP() };
    if code_page == CP_UTF8 {
        return String::from_utf8_lossy(bytes);
    }
    match from_code_page(code_page, bytes) {
        Some(text) => Cow::Owned(text),
        None => String::from_utf8_lossy(bytes),
    }
}

/// Decode `bytes` from `code_page`; `None` when Windows cannot (an unknown code page, or more
/// than `i32::MAX` bytes).
fn from_code_page(code_page: u32, bytes: &[u8]) -> Option<String> {
    let len = i32::try_from(bytes.len()).ok()?;
    if len == 0 {
        return Some(String::new());
    }
    // SAFETY: a length query: the input pointer and length describe `bytes`; no output.
    #[allow(unsafe_code)]
    let needed =
        unsafe { MultiByteToWideChar(code_page, 0, bytes.as_ptr(), len, std::ptr::null_mut(), 0) };
    let capacity = usize::try_from(needed).ok().filter(|n| *n > 0)?;
    let mut wide = vec![0u16; capacity];
    // SAFETY: the output pointer and length describe `wide`, which is `needed` units long.
    #[allow(unsafe_code)]
    let written = unsafe {
        MultiByteToWideChar(code_page, 0, bytes.as_ptr(), len, wide.as_mut_ptr(), needed)
    };
    let written = usize::try_from(written).ok().filter(|n| *n > 0)?;
    Some(String::from_utf16_lossy(&wide[..written]))
}
