//! The SSRF guard of `fetch_url`: which URLs and addresses a fetch may reach.
//!
//! A model chooses the URL, and a page it reads may have been written to steer it, so every
//! request is checked as if hostile: only `http`/`https`, no credentials in the URL, and no
//! address that is not on the public internet (loopback, RFC 1918, unique local, link-local
//! with the cloud metadata address, CGNAT, unspecified, broadcast, multicast, reserved,
//! documentation and benchmark ranges, and the IPv4-mapped, IPv4-compatible, NAT64 and 6to4
//! IPv6 forms of all of these).
//!
//! Where each rule is enforced:
//! - [`Guard::check_url`], before the first request and before every redirect hop (the tool
//!   follows redirects itself): scheme, credentials, `denied_hosts`, `localhost` names, and the
//!   address of an IP-literal host. reqwest never asks a resolver about IP literals, so this is
//!   where they are checked. The `url` crate has already turned odd spellings (`0x7f.1`,
//!   `2130706433`, `127.1`, `[::ffff:127.0.0.1]`) into plain addresses.
//! - [`GuardedResolver`], the HTTP client's DNS resolver: a name is resolved once, every answer
//!   is checked, and the client connects to exactly the checked addresses, so a second DNS
//!   answer (rebinding) cannot swap in another one. Any private answer refuses the whole name:
//!   a public name with a private address is a rebinding setup or a misconfiguration either way.
//! - With an HTTP proxy from the environment, reqwest asks the resolver about the proxy's name
//!   (exempted: the operator chose it) and the proxy resolves the target. [`Guard::check_host`]
//!   is then also run on the target's own resolution before each hop; the proxy's second
//!   lookup is outside toolport's control (docs/web.md says so).
//!
//! `allowed_hosts` exempts exactly the hosts listed (by name or address literal, compared
//! case-insensitively); a redirect from an allowed host to any other host is checked in full.
//! `denied_hosts` refuses a host whatever it resolves to. `allow_private` turns the address
//! rules off (scheme, credentials and `denied_hosts` still apply).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use url::{Host, Url};

/// Why an address is not public: the rule that refuses it, in words a reader can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16.
    Private,
    /// fc00::/7 (and the deprecated site-local fec0::/10).
    UniqueLocal,
    /// 169.254.0.0/16 (the cloud metadata address 169.254.169.254 among them), fe80::/10.
    LinkLocal,
    /// 100.64.0.0/10, carrier-grade NAT: the provider's network, not the internet.
    Cgnat,
    /// 0.0.0.0/8, ::: "this host", which reaches the local machine on Linux.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 240.0.0.0/4, 192.0.0.0/24 (IETF protocol assignments), 64:ff9b:1::/48 (local NAT64).
    Reserved,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32: never routed.
    Documentation,
    /// 198.18.0.0/15: network benchmarks, never routed.
    Benchmark,
}

impl Rule {
    /// The rule as a reader sees it, with its ranges.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Rule::Loopback => "a loopback address (127.0.0.0/8, ::1)",
            Rule::Private => "a private address (RFC 1918: 10/8, 172.16/12, 192.168/16)",
            Rule::UniqueLocal => "a unique local IPv6 address (fc00::/7)",
            Rule::LinkLocal => {
                "a link-local address (169.254.0.0/16 incl. the cloud metadata address 169.254.169.254, fe80::/10)"
            }
            Rule::Cgnat => "a carrier-grade NAT address (100.64.0.0/10)",
            Rule::Unspecified => "an unspecified address (0.0.0.0/8, ::)",
            Rule::Broadcast => "the broadcast address (255.255.255.255)",
            Rule::Multicast => "a multicast address (224.0.0.0/4, ff00::/8)",
            Rule::Reserved => "a reserved address (240.0.0.0/4, 192.0.0.0/24, 64:ff9b:1::/48)",
            Rule::Documentation => {
                "a documentation address (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32)"
            }
            Rule::Benchmark => "a benchmarking address (198.18.0.0/15)",
        }
    }
}

/// The rule that keeps `ip` off limits, or `None` for a public address.
pub(crate) fn classify(ip: IpAddr) -> Option<Rule> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Rule> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => Rule::Unspecified,
        (127, _, _) => Rule::Loopback,
        (10, _, _) => Rule::Private,
        (172, 16..=31, _) => Rule::Private,
        (192, 168, _) => Rule::Private,
        (169, 254, _) => Rule::LinkLocal,
        (100, 64..=127, _) => Rule::Cgnat,
        (192, 0, 0) => Rule::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Rule::Documentation,
        (198, 18..=19, _) => Rule::Benchmark,
        (224..=239, _, _) => Rule::Multicast,
        _ if ip.is_broadcast() => Rule::Broadcast,
        (240..=255, _, _) => Rule::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<Rule> {
    if ip.is_unspecified() {
        return Some(Rule::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Rule::Loopback);
    }
    // Forms that carry an IPv4 address: judged by that address, since that is where the packets
    // end up (the kernel, a NAT64 gateway or a 6to4 relay delivers them there).
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        0x64 if s[1] == 0xff9b && s[2] == 1 => Rule::Reserved,
        0xfc00..=0xfdff => Rule::UniqueLocal,
        0xfec0..=0xfeff => Rule::UniqueLocal,
        0xfe80..=0xfebf => Rule::LinkLocal,
        0xff00..=0xffff => Rule::Multicast,
        0x2001 if s[1] == 0x0db8 => Rule::Documentation,
        _ => return None,
    })
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`),
/// NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::…`) IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        // `::` and `::1` are handled before; anything else in ::/96 is IPv4-compatible.
        [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// Why a URL or an address is refused. The message names the URL's host or the address and
/// the rule, and says what the operator can change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// Not http or https.
    #[error("the scheme {0:?} is not allowed; fetch_url reads only http:// and https:// URLs")]
    Scheme(String),
    /// The URL has no host (`http:///x`, `data:` …).
    #[error("the URL has no host; give a full http:// or https:// URL")]
    NoHost,
    /// `user:pass@` in the URL.
    #[error(
        "the URL contains credentials (user:password@); fetch_url does not send credentials, remove them from the URL"
    )]
    Credentials,
    /// The operator's `denied_hosts`.
    #[error("the host {0} is refused by the operator (web.fetch.denied_hosts)")]
    Denied(String),
    /// `localhost` or a name under `.localhost` (RFC 6761: always the local machine).
    #[error(
        "the host {0} is the local machine (localhost); fetch_url only reaches public addresses (an operator can list the host in web.fetch.allowed_hosts)"
    )]
    Localhost(String),
    /// An address that is not public.
    #[error(
        "{host} resolves to {ip}, {rule}; fetch_url only reaches public addresses (an operator can list the host in web.fetch.allowed_hosts or set web.fetch.allow_private = true)",
        rule = rule.describe()
    )]
    Address {
        /// The host as written in the URL.
        host: String,
        /// The refused address.
        ip: IpAddr,
        /// The rule that refused it.
        rule: Rule,
    },
    /// A name with no address at all.
    #[error("the host {0} has no address (DNS answered with none)")]
    NoAddress(String),
}

/// The guard's settings, normalised.
#[derive(Debug, Clone, Default)]
pub(crate) struct Guard {
    allow_private: bool,
    allowed_hosts: Vec<String>,
    denied_hosts: Vec<String>,
}

/// A host as compared against the lists: lowercase, without a trailing dot or IPv6 brackets.
fn normalise_host(host: &str) -> String {
    host.trim()
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

impl Guard {
    /// A guard with the operator's settings (hosts compared case-insensitively).
    pub(crate) fn new(allow_private: bool, allowed: &[String], denied: &[String]) -> Self {
        Self {
            allow_private,
            allowed_hosts: allowed.iter().map(|h| normalise_host(h)).collect(),
            denied_hosts: denied.iter().map(|h| normalise_host(h)).collect(),
        }
    }

    fn is_allowed(&self, host: &str) -> bool {
        self.allow_private || self.allowed_hosts.iter().any(|h| h == host)
    }

    /// Check a URL before it is requested (the first one and every redirect hop): scheme,
    /// credentials, denied hosts, localhost names and IP-literal addresses. A name's addresses
    /// are checked when it is resolved ([`GuardedResolver`]).
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Credentials);
        }
        let host = url.host().ok_or(Refusal::NoHost)?;
        let name = normalise_host(&host.to_string());
        if self.denied_hosts.contains(&name) {
            return Err(Refusal::Denied(name));
        }
        if self.is_allowed(&name) {
            return Ok(());
        }
        match host {
            Host::Domain(_) if name == "localhost" || name.ends_with(".localhost") => {
                Err(Refusal::Localhost(name))
            }
            Host::Domain(_) => Ok(()),
            Host::Ipv4(ip) => check_ip(&name, IpAddr::V4(ip)),
            Host::Ipv6(ip) => check_ip(&name, IpAddr::V6(ip)),
        }
    }

    /// Check the addresses a name resolved to: all must be public unless the name is allowed.
    pub(crate) fn check_host(&self, host: &str, addrs: &[IpAddr]) -> Result<(), Refusal> {
        let name = normalise_host(host);
        if self.denied_hosts.contains(&name) {
            return Err(Refusal::Denied(name));
        }
        if self.is_allowed(&name) {
            return Ok(());
        }
        if addrs.is_empty() {
            return Err(Refusal::NoAddress(name));
        }
        addrs.iter().try_for_each(|ip| check_ip(&name, *ip))
    }
}

fn check_ip(host: &str, ip: IpAddr) -> Result<(), Refusal> {
    match classify(ip) {
        None => Ok(()),
        Some(rule) => Err(Refusal::Address {
            host: host.to_owned(),
            ip,
            rule,
        }),
    }
}

/// The fetch client's DNS resolver: resolves once with the system resolver and hands reqwest
/// only addresses the guard accepted, so the connection goes to a checked address.
pub(crate) struct GuardedResolver {
    guard: Arc<Guard>,
    /// Names of the proxies in the environment, which the operator chose: not checked.
    proxies: Vec<String>,
}

impl fmt::Debug for GuardedResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedResolver").finish_non_exhaustive()
    }
}

impl GuardedResolver {
    /// A resolver enforcing `guard`; `proxies` are the proxy host names to let through.
    pub(crate) fn new(guard: Arc<Guard>, proxies: Vec<String>) -> Self {
        Self {
            guard,
            proxies: proxies.into_iter().map(|p| normalise_host(&p)).collect(),
        }
    }
}

/// For the server's own fetches of URLs a client names (OAuth client ID metadata documents):
/// `builder` made to refuse what `fetch_url` refuses by default (private, loopback, link-local
/// and other reserved addresses, at resolution: the resolver is the guard's), with no proxy from
/// the environment (a proxy would resolve the name itself, past the guard).
#[cfg(feature = "host")]
pub fn public_only(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver::new(Arc::default(), Vec::new())))
}

/// Whether `url`'s own host passes the default guard (an address literal or `localhost` is
/// checked here, before any resolution); the reason when it does not.
#[cfg(feature = "host")]
pub fn check_public_url(url: &Url) -> Result<(), String> {
    Guard::default().check_url(url).map_err(|e| e.to_string())
}

/// Resolve `host` with the system resolver (port 0: reqwest puts the URL's port in).
pub(crate) async fn lookup(host: &str) -> std::io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((host, 0)).await?.collect())
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.guard.clone();
        let host = name.as_str().to_owned();
        let is_proxy = self.proxies.contains(&normalise_host(&host));
        Box::pin(async move {
            let addrs = lookup(&host).await?;
            if !is_proxy {
                let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
                guard.check_host(&host, &ips)?;
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The host names of the proxies set in the environment (`HTTP_PROXY`, `HTTPS_PROXY`,
/// `ALL_PROXY`, upper or lower case), which reqwest uses.
pub(crate) fn proxy_hosts(env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .into_iter()
    .filter_map(env)
    .filter_map(|value| {
        let value = value.trim();
        let with_scheme = if value.contains("://") {
            value.to_owned()
        } else {
            format!("http://{value}")
        };
        Url::parse(&with_scheme)
            .ok()?
            .host_str()
            .map(normalise_host)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn refused(guard: &Guard, text: &str) -> Refusal {
        guard
            .check_url(&url(text))
            .expect_err(&format!("{text} should be refused"))
    }

    #[test]
    fn every_private_range_is_classified_with_its_rule() {
        for (ip, rule) in [
            ("127.0.0.1", Rule::Loopback),
            ("127.255.255.254", Rule::Loopback),
            ("::1", Rule::Loopback),
            ("10.1.2.3", Rule::Private),
            ("172.16.0.1", Rule::Private),
            ("172.31.255.255", Rule::Private),
            ("192.168.1.1", Rule::Private),
            ("fc00::1", Rule::UniqueLocal),
            ("fd12:3456::1", Rule::UniqueLocal),
            ("fec0::1", Rule::UniqueLocal),
            ("169.254.169.254", Rule::LinkLocal),
            ("fe80::1", Rule::LinkLocal),
            ("100.64.0.1", Rule::Cgnat),
            ("100.127.255.255", Rule::Cgnat),
            ("0.0.0.0", Rule::Unspecified),
            ("0.1.2.3", Rule::Unspecified),
            ("::", Rule::Unspecified),
            ("255.255.255.255", Rule::Broadcast),
            ("224.0.0.1", Rule::Multicast),
            ("239.255.255.250", Rule::Multicast),
            ("ff02::1", Rule::Multicast),
            ("240.0.0.1", Rule::Reserved),
            ("192.0.0.8", Rule::Reserved),
            ("64:ff9b:1::1", Rule::Reserved),
            ("192.0.2.1", Rule::Documentation),
            ("198.51.100.7", Rule::Documentation),
            ("203.0.113.9", Rule::Documentation),
            ("2001:db8::1", Rule::Documentation),
            ("198.18.0.1", Rule::Benchmark),
            // IPv6 forms of IPv4 addresses are judged by the IPv4 address.
            ("::ffff:127.0.0.1", Rule::Loopback),
            ("::ffff:169.254.169.254", Rule::LinkLocal),
            ("::ffff:10.0.0.1", Rule::Private),
            ("::127.0.0.1", Rule::Loopback),
            ("::10.0.0.1", Rule::Private),
            ("64:ff9b::a9fe:a9fe", Rule::LinkLocal),
            ("64:ff9b::7f00:1", Rule::Loopback),
            ("2002:7f00:1::1", Rule::Loopback),
            ("2002:c0a8:101::1", Rule::Private),
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(classify(parsed), Some(rule), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.169.0.1",
            "169.253.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(classify(parsed), None, "{ip}");
        }
    }

    #[test]
    fn urls_to_private_addresses_are_refused_naming_address_and_rule() {
        let guard = Guard::default();
        for (text, ip, rule) in [
            ("http://127.0.0.1:8080/", "127.0.0.1", Rule::Loopback),
            ("http://[::1]:8080/", "::1", Rule::Loopback),
            (
                "http://169.254.169.254/latest/meta-data/",
                "169.254.169.254",
                Rule::LinkLocal,
            ),
            // Odd spellings: the url crate parses them to the plain address (WHATWG rules).
            ("http://0x7f.1/", "127.0.0.1", Rule::Loopback),
            ("http://2130706433/", "127.0.0.1", Rule::Loopback),
            ("http://127.1/", "127.0.0.1", Rule::Loopback),
            ("http://0177.0.0.1/", "127.0.0.1", Rule::Loopback),
            ("http://0x7f000001/", "127.0.0.1", Rule::Loopback),
            ("http://0/", "0.0.0.0", Rule::Unspecified),
            (
                "http://[::ffff:127.0.0.1]/",
                "::ffff:127.0.0.1",
                Rule::Loopback,
            ),
            (
                "http://[::ffff:a9fe:a9fe]/",
                "::ffff:169.254.169.254",
                Rule::LinkLocal,
            ),
            ("https://100.64.1.1/", "100.64.1.1", Rule::Cgnat),
            ("http://[fc00::1]/", "fc00::1", Rule::UniqueLocal),
            ("http://[fe80::1]/", "fe80::1", Rule::LinkLocal),
            ("http://224.0.0.251/", "224.0.0.251", Rule::Multicast),
            ("http://[ff02::1]/", "ff02::1", Rule::Multicast),
            ("http://10.0.0.5/admin", "10.0.0.5", Rule::Private),
            ("http://192.168.0.1./", "192.168.0.1", Rule::Private),
        ] {
            let refusal = refused(&guard, text);
            let expected_ip: IpAddr = ip.parse().unwrap();
            match &refusal {
                Refusal::Address { ip, rule: r, .. } => {
                    assert_eq!((*ip, *r), (expected_ip, rule), "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
            let message = refusal.to_string();
            assert!(
                message.contains(&expected_ip.to_string()) && message.contains(rule.describe()),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn schemes_credentials_and_localhost_are_refused() {
        let guard = Guard::default();
        assert_eq!(
            refused(&guard, "file:///etc/passwd"),
            Refusal::Scheme("file".into())
        );
        assert_eq!(
            refused(&guard, "ftp://example.com/x"),
            Refusal::Scheme("ftp".into())
        );
        assert_eq!(
            refused(&guard, "gopher://example.com/"),
            Refusal::Scheme("gopher".into())
        );
        assert_eq!(
            refused(&guard, "http://user:pass@example.com/"),
            Refusal::Credentials
        );
        assert_eq!(
            refused(&guard, "http://user@example.com/"),
            Refusal::Credentials
        );
        assert_eq!(
            refused(&guard, "http://localhost:3000/"),
            Refusal::Localhost("localhost".into())
        );
        assert_eq!(
            refused(&guard, "http://LOCALHOST./"),
            Refusal::Localhost("localhost".into())
        );
        assert_eq!(
            refused(&guard, "http://app.localhost/"),
            Refusal::Localhost("app.localhost".into())
        );
        // Credentials are refused even when the guard is off.
        let open = Guard::new(true, &[], &[]);
        assert_eq!(
            refused(&open, "http://a:b@127.0.0.1/"),
            Refusal::Credentials
        );
        assert_eq!(refused(&open, "file:///x"), Refusal::Scheme("file".into()));
    }

    #[test]
    fn public_urls_pass() {
        let guard = Guard::default();
        for text in [
            "https://example.com/",
            "http://docs.rs/reqwest",
            "https://8.8.8.8/",
            "https://[2606:4700:4700::1111]/",
        ] {
            assert_eq!(guard.check_url(&url(text)), Ok(()), "{text}");
        }
    }

    #[test]
    fn allowed_hosts_exempt_only_themselves_and_denied_hosts_always_refuse() {
        let guard = Guard::new(
            false,
            &["127.0.0.1".into(), "Wiki.Corp.".into(), "[::1]".into()],
            &["evil.example".into(), "8.8.8.8".into()],
        );
        assert_eq!(guard.check_url(&url("http://127.0.0.1:9/")), Ok(()));
        assert_eq!(guard.check_url(&url("http://[::1]:9/")), Ok(()));
        assert!(matches!(
            refused(&guard, "http://127.0.0.2/"),
            Refusal::Address {
                rule: Rule::Loopback,
                ..
            }
        ));
        assert!(matches!(
            refused(&guard, "http://169.254.169.254/"),
            Refusal::Address {
                rule: Rule::LinkLocal,
                ..
            }
        ));
        let wiki: IpAddr = "10.0.0.7".parse().unwrap();
        assert_eq!(guard.check_host("wiki.corp", &[wiki]), Ok(()));
        assert!(guard.check_host("other.corp", &[wiki]).is_err());
        assert_eq!(
            refused(&guard, "https://EVIL.example/"),
            Refusal::Denied("evil.example".into())
        );
        assert_eq!(
            refused(&guard, "https://8.8.8.8/"),
            Refusal::Denied("8.8.8.8".into())
        );
        let public: IpAddr = "1.1.1.1".parse().unwrap();
        assert_eq!(
            guard.check_host("evil.example", &[public]),
            Err(Refusal::Denied("evil.example".into()))
        );
        // allow_private does not lift denied_hosts.
        let open = Guard::new(true, &[], &["evil.example".into()]);
        assert_eq!(open.check_url(&url("http://10.0.0.1/")), Ok(()));
        assert!(open.check_url(&url("http://evil.example/")).is_err());
    }

    #[test]
    fn a_name_with_any_private_answer_is_refused() {
        let guard = Guard::default();
        let public: IpAddr = "1.1.1.1".parse().unwrap();
        let private: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(guard.check_host("example.com", &[public]), Ok(()));
        assert_eq!(
            guard.check_host("rebind.example", &[public, private]),
            Err(Refusal::Address {
                host: "rebind.example".into(),
                ip: private,
                rule: Rule::Private
            })
        );
        assert_eq!(
            guard.check_host("empty.example", &[]),
            Err(Refusal::NoAddress("empty.example".into()))
        );
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_that_resolves_to_loopback() {
        use reqwest::dns::Resolve;
        let resolver = GuardedResolver::new(Arc::new(Guard::default()), vec![]);
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        let Err(error) = resolver.resolve(name).await else {
            panic!("localhost resolved through the guard");
        };
        let refusal = error.downcast_ref::<Refusal>().unwrap();
        assert!(
            matches!(
                refusal,
                Refusal::Address {
                    rule: Rule::Loopback,
                    ..
                }
            ),
            "{refusal:?}"
        );
        // A proxy's name is the operator's choice and is not checked.
        let resolver = GuardedResolver::new(Arc::new(Guard::default()), vec!["LOCALHOST".into()]);
        let name: reqwest::dns::Name = "localhost".parse().unwrap();
        assert!(resolver.resolve(name).await.is_ok());
    }

    #[test]
    fn proxy_hosts_are_read_from_the_environment() {
        let env = |k: &str| match k {
            "HTTPS_PROXY" => Some("http://Proxy.corp:3128".to_owned()),
            "all_proxy" => Some("socks.corp:1080".to_owned()),
            _ => None,
        };
        assert_eq!(proxy_hosts(env), vec!["proxy.corp", "socks.corp"]);
    }
}
