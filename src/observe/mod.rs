//! Seeing and bounding what tools do: the audit log ([`audit`]), written for every
//! `tools/call` by the server when the call ends, from the result and the call's
//! [`crate::tool::CallFacts`] (the argv a command ran, whether the user declined), which the
//! executor and the registry fill in. (Metrics, traces and budgets belong here too: issue 12.)

pub mod audit;
