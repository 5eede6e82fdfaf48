//! Windows: there are no permission bits (access is decided by ACLs, which `path_info` does not
//! report); only the read-only attribute is shown (`readonly`).

pub(super) fn permissions(_meta: &cap_std::fs::Metadata) -> Option<(String, String)> {
    None
}
