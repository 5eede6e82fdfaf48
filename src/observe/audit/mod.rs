//! The audit log: one JSON object per line for every `tools/call`, written when the call ends,
//! whatever its outcome (ok, error, denied, declined, cancelled, timeout), so an operator can
//! answer "what did the agent run?".
//!
//! - Off by default; `[audit] path`, `--audit-log FILE`, `TOOLPORT_AUDIT_LOG`; `-` is stderr.
//!   Never stdout (the protocol channel on stdio).
//! - Redacted before it is written: every value of an `env` argument, every value whose key
//!   looks secret (`token`, `key`, `secret`, `password`, `authorization` …), every string
//!   equal to or containing a configured secret (API keys, the HTTP token), and the userinfo of
//!   every URL anywhere in the record (`https://user:password@host/` is written
//!   `https://***@host/`; the userinfo an argument held is scrubbed wherever else it appears).
//! - The file is created 0600 (on Windows it inherits its folder's ACL: no mode bits, see
//!   `private_file`) and appended with one `write` per record; it is rotated by size
//!   (`max_bytes`, keeping `keep` old files: `audit.log.1` is the newest).
//! - Writing never fails or delays a call: records go to a writer thread over a bounded
//!   channel, written in batches (within 10 ms); a write error is logged on stderr at most
//!   once a minute and the record is dropped.
//!
//! One concern per file: `settings.rs` (the flag, the `[audit]` section, [`AuditSettings`]),
//! `record.rs` (how a call ended and what a record holds), `redact.rs` (a record rendered as
//! a redacted JSON line), `writer.rs` (the [`AuditLog`]: the writer thread, the file and its
//! rotation) and `private_file/` (opening the file private, per OS).

mod private_file;
mod record;
mod redact;
mod settings;
mod writer;

pub(crate) use record::{Ending, Outcome, outcome_of};
pub(crate) use settings::AuditArgs;
pub use settings::AuditSettings;
pub use writer::AuditLog;
pub(crate) use writer::{Caller, Pending};
