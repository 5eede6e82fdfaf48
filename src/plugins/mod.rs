//! Plugins (work in progress).

// Until the plugin loader uses it.
#![allow(dead_code)]

pub(crate) mod template;
