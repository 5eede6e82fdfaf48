//! Who a request really comes from when a reverse proxy or load balancer stands in front:
//! `[http] trusted_proxies` ([`TrustedProxies`]), the peers whose `X-Forwarded-*` headers are
//! believed, and the client's address they give ([`TrustedProxies::client`]).
//!
//! Behind a balancer every request's peer is the balancer, so a per-client rule keyed by the
//! peer (the request rate, [`super::gate`]) would count every client as one. A trusted proxy
//! says who its client was in `X-Forwarded-For` (haproxy `option forwardfor`, nginx
//! `$proxy_add_x_forwarded_for`, cloud balancers), appending the address it received the
//! request from to whatever the request already carried. So the list is read from the right:
//! each address that is itself a trusted proxy is a hop of the operator's own; the first one
//! that is not is the client. What a client wrote into the header itself sits to the left of
//! that and is never reached, so no client can choose its own address. An address that does
//! not parse stops the walk at the last trusted hop (the clients behind it share that
//! proxy's key rather than escape it).
//!
//! Only `X-Forwarded-For`, not RFC 7239 `Forwarded`: a proxy writes one of them, and reading
//! the one it does not write would take a client's own header for the truth. The same family
//! is believed for the resource URL with OAuth (`X-Forwarded-Proto`/`Host`:
//! [`super::oauth::metadata`]), from the same proxies.
//!
//! Written here rather than taken from a crate (`axum-client-ip`): the rule is these few lines,
//! and it must share the proxies list with the OAuth resource URL.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;
use serde::{Serialize, Serializer};
use toolport_tools::host::settings::SettingError;

/// The header a proxy names its client in.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// The peers whose `X-Forwarded-*` headers are believed (addresses or CIDR blocks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parse `texts` (`10.0.0.7`, `::1`, `10.0.0.0/8`) for the setting `key`.
    pub(crate) fn parse(key: &'static str, texts: &[String]) -> Result<Self, SettingError> {
        texts
            .iter()
            .map(|text| {
                let text = text.trim();
                text.parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        SettingError::new(
                            key,
                            format!(
                                "{text:?} is not an IP address or a CIDR block such as 10.0.0.0/8"
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    /// These and `other`'s, each once.
    pub(crate) fn merged(mut self, other: &Self) -> Self {
        for net in &other.0 {
            if !self.0.contains(net) {
                self.0.push(*net);
            }
        }
        self
    }

    /// Whether `peer` is a trusted proxy.
    pub(crate) fn trusts(&self, peer: Option<IpAddr>) -> bool {
        peer.is_some_and(|ip| self.0.iter().any(|net| net.contains(&ip)))
    }

    /// The client a request from `peer` with `headers` comes from: `peer` itself unless it is
    /// a trusted proxy; then the rightmost address of `X-Forwarded-For` (every line of it, in
    /// order) that is not a trusted proxy (see the module docs).
    pub(crate) fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        if !self.trusts(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .filter(|hop| !hop.is_empty())
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(address) = parse_hop(hop) else {
                break;
            };
            client = Some(address);
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, or one with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:80`, as some balancers write it).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|a| a.ip()))
}

/// As `toolport config` prints it: the list.
impl Serialize for TrustedProxies {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(IpNet::to_string))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::tests::headers;

    fn proxies(list: &[&str]) -> TrustedProxies {
        let texts: Vec<String> = list.iter().map(ToString::to_string).collect();
        TrustedProxies::parse("http.trusted_proxies", &texts).unwrap()
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn the_client_is_the_rightmost_address_that_is_not_a_trusted_proxy() {
        let trusted = proxies(&["10.0.0.0/8", "127.0.0.1"]);
        // Each entry of `list` is one header line.
        let from = |list: &[&str]| {
            let mut lines = HeaderMap::new();
            for line in list {
                lines.append(FORWARDED_FOR, line.parse().unwrap());
            }
            trusted.client(ip("10.0.0.2"), &lines)
        };
        // A proxy's client.
        assert_eq!(from(&["203.0.113.7"]), ip("203.0.113.7"));
        // What the client wrote itself is left of its own address: never reached.
        assert_eq!(from(&["198.51.100.1, 203.0.113.7"]), ip("203.0.113.7"));
        assert_eq!(from(&["198.51.100.1", "203.0.113.7"]), ip("203.0.113.7"));
        // Two proxies of the operator's: the second names the first, which names the client.
        assert_eq!(from(&["203.0.113.7, 10.1.1.1"]), ip("203.0.113.7"));
        // Every hop trusted: the farthest one known.
        assert_eq!(from(&["127.0.0.1, 10.1.1.1"]), ip("127.0.0.1"));
        // Ports as some balancers write them.
        assert_eq!(from(&["[2001:db8::1]:4711"]), ip("2001:db8::1"));
        assert_eq!(from(&["203.0.113.7:80"]), ip("203.0.113.7"));
        // Garbage stops at the last trusted hop: no escape from the proxy's key.
        assert_eq!(from(&["203.0.113.7, unknown, 10.1.1.1"]), ip("10.1.1.1"));
        assert_eq!(from(&["not an address"]), ip("10.0.0.2"));
        // No header: the proxy itself.
        assert_eq!(from(&[]), ip("10.0.0.2"));
        // A peer that is not trusted is the client, whatever it says.
        let claims = headers(&[("x-forwarded-for", "203.0.113.7")]);
        assert_eq!(trusted.client(ip("192.0.2.9"), &claims), ip("192.0.2.9"));
        assert_eq!(
            TrustedProxies::default().client(ip("10.0.0.2"), &claims),
            ip("10.0.0.2")
        );
        assert_eq!(trusted.client(None, &claims), None);
    }

    #[test]
    fn proxies_parse_merge_and_print() {
        let err = TrustedProxies::parse("http.trusted_proxies", &["proxy".into()]).unwrap_err();
        assert!(err.to_string().contains("http.trusted_proxies"), "{err}");
        assert!(err.to_string().contains("not an IP address"), "{err}");
        let merged = proxies(&["10.0.0.0/8", "::1"]).merged(&proxies(&["::1", "192.0.2.1"]));
        assert_eq!(
            serde_json::to_string(&merged).unwrap(),
            r#"["10.0.0.0/8","::1/128","192.0.2.1/32"]"#
        );
        assert!(merged.trusts(ip("10.9.9.9")) && !merged.trusts(ip("192.0.2.2")));
    }
}
