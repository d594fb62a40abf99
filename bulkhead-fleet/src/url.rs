//! A Redis URL that never shows its password: [`RedisUrl`].

use std::fmt;
use std::ops::Range;

/// A Redis URL as given (`redis://user:password@host:6379/0`), whose
/// `Debug` and `Display` replace the password with `***`. The text with the
/// password is read only to connect.
///
/// The password is found by where it sits, never by what it holds: in the
/// authority, from the `:` after the user name to the *last* `@` (so a
/// password may hold any character, `@`, `/`, `?` and `#` included, even
/// unencoded); given as a query parameter (`pass=`, `password=`, and so
/// `sentinel_password=`), to the end of the URL. With several hosts
/// (`redis+sentinel://h1,u:p@h2/m`, `redis+cluster://u:p@h1,u:q@h2`), the
/// authority's rule hides everything from the first `:` of what comes
/// before the last `@`, so a password in any host part is hidden, with
/// the hosts before it (shown by the configuration once parsed).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    url: String,
    /// Where the secrets are in `url`, in order, not overlapping.
    secrets: Vec<Range<usize>>,
    /// The texts to scrub from messages: each secret as written, as the
    /// client reads it (up to a query's next parameter) and decoded.
    scrubbed: Vec<String>,
}

impl RedisUrl {
    pub(crate) fn new(url: &str) -> Self {
        let (password, query) = secrets(url);
        // As written, and as the client decodes it: percent escapes, and in
        // a query `+` for a space, up to the next parameter.
        let mut scrubbed = Vec::new();
        for text in password.iter().map(|r| &url[r.clone()]) {
            scrubbed.extend([text.to_owned(), percent_decoded(text)]);
        }
        for text in query.iter().map(|r| &url[r.clone()]) {
            let value = text.split(['&', '#']).next().unwrap_or(text);
            for text in [text, value] {
                scrubbed.push(text.to_owned());
                scrubbed.push(percent_decoded(&text.replace('+', " ")));
            }
        }
        scrubbed.retain(|text| !text.is_empty());
        // Longest first, so that no part of a longer one is left behind.
        scrubbed.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        scrubbed.dedup();
        let mut ranges: Vec<Range<usize>> = password.into_iter().chain(query).collect();
        ranges.sort_by_key(|r| r.start);
        let mut secrets: Vec<Range<usize>> = Vec::new();
        for range in ranges {
            match secrets.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => secrets.push(range),
            }
        }
        RedisUrl {
            url: url.to_owned(),
            secrets,
            scrubbed,
        }
    }

    /// The URL with its password, to connect.
    pub(crate) fn expose(&self) -> &str {
        &self.url
    }

    /// Whether the user name or password holds a `/`, `?` or `#`
    /// unencoded: a URL parser ends the host part at the first of them, so
    /// the client would read another host (or none) than the one meant.
    pub(crate) fn userinfo_needs_encoding(&self) -> bool {
        authority_userinfo(&self.url)
            .is_some_and(|(start, end)| self.url[start..end].contains(['/', '?', '#']))
    }

    /// `text` with every occurrence of the password replaced by `***`: for
    /// messages that came from elsewhere (the client crate, the system).
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.scrubbed
            .iter()
            .fold(text.to_owned(), |text, secret| text.replace(secret, "***"))
    }
}

/// Where the user information of a URL with an authority (`redis://...`,
/// not `redis+unix:///...`) is: from after `://` to the last `@`.
fn authority_userinfo(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    if rest.starts_with('/') {
        return None;
    }
    rest.rfind('@').map(|at| (start, start + at))
}

/// The byte ranges of the secrets in `url`: the password of the authority
/// (after the first `:` of the user information), and from a `pass=` or
/// `password=` parameter to the end of the URL (whatever it holds, so
/// that no character of it ends it early).
fn secrets(url: &str) -> (Option<Range<usize>>, Option<Range<usize>>) {
    let password = authority_userinfo(url).and_then(|(start, end)| {
        url[start..end]
            .find(':')
            .map(|colon| start + colon + 1..end)
    });
    let query = ["pass=", "password="]
        .iter()
        .filter_map(|key| url.find(key).map(|i| i + key.len()))
        .min()
        .map(|from| from..url.len());
    (password, query)
}

/// `text` with its `%XX` escapes decoded (an escape that is not one, or
/// bytes that are not UTF-8, as they are).
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'%'));
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = 0;
        for range in &self.secrets {
            f.write_str(&self.url[shown..range.start])?;
            f.write_str("***")?;
            shown = range.end;
        }
        f.write_str(&self.url[shown..])
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::RedisUrl;

    /// Every character with a meaning in a URL, and a few more.
    const SPECIAL: &str = ":/?#[]@!$&'()*+,;=% \"<>\\^`{|}~";

    #[test]
    fn a_password_in_the_url_is_never_shown() {
        for (url, shown) in [
            ("redis://:s3cr3t@h:6379/0", "redis://:***@h:6379/0"),
            ("redis://app:s3cr3t@h/1", "redis://app:***@h/1"),
            ("redis://app:p@ss:w@h", "redis://app:***@h"),
            (
                "redis://app:ab#Sup3rS3cretPw@127.0.0.1:6379/0",
                "redis://app:***@127.0.0.1:6379/0",
            ),
            ("redis://app:a/b?c#d@h:1/0?x=1", "redis://app:***@h:1/0?x=1"),
            (
                "redis+unix:///r.sock?db=1&pass=s3cr3t",
                "redis+unix:///r.sock?db=1&pass=***",
            ),
            (
                "redis+unix:///r.sock?pass=s3&cr#3t@x:y",
                "redis+unix:///r.sock?pass=***",
            ),
            ("redis://:p@h/0?password=q", "redis://:***@h/0?password=***"),
            ("redis://:pass=q@h/0", "redis://:***"),
            ("redis://h:6379", "redis://h:6379"),
            ("redis://user@h", "redis://user@h"),
            ("app:s3cr3t@h", "app:***@h"),
        ] {
            let url = RedisUrl::new(url);
            assert_eq!(url.to_string(), shown);
            assert_eq!(format!("{url:?}"), format!("\"{shown}\""));
        }
        let url = RedisUrl::new("redis://app:s3cr3t@h/1");
        assert_eq!(url.scrub("WRONGPASS s3cr3t"), "WRONGPASS ***");
    }

    #[test]
    fn no_character_of_a_password_lets_any_of_it_show() {
        let passwords = SPECIAL
            .chars()
            .map(|c| format!("Sup3r{c}S3cret"))
            .chain([format!("Sup3r{SPECIAL}S3cret"), SPECIAL.to_owned()]);
        for password in passwords {
            for url in [
                format!("redis://app:{password}@127.0.0.1:6379/0"),
                format!("redis://:{password}@[::1]:6379"),
                format!("redis+unix:///tmp/r.sock?db=0&pass={password}"),
            ] {
                let url = RedisUrl::new(&url);
                for shown in [url.to_string(), format!("{url:?}")] {
                    assert!(!shown.contains("Sup3r"), "{shown}");
                    assert!(!shown.contains("S3cret"), "{shown}");
                    assert!(shown.contains("***"), "{shown}");
                }
                let message = format!("AUTH {password} refused; {password}");
                assert_eq!(url.scrub(&message), "AUTH *** refused; ***");
            }
        }
        // Decoded as the client decodes it.
        let url = RedisUrl::new("redis://app:Sup3r%23%2F%3FS3cret@h/0");
        assert_eq!(url.to_string(), "redis://app:***@h/0");
        assert_eq!(url.scrub("bad password Sup3r#/?S3cret"), "bad password ***");
    }

    #[test]
    fn a_password_in_any_host_part_of_a_multi_host_url_is_never_shown() {
        for (url, shown) in [
            (
                "redis+sentinel://app:s3cr3t@h1,h2/m",
                "redis+sentinel://app:***@h1,h2/m",
            ),
            (
                "redis+sentinel://h1:1,app:s3cr3t@h2:2/m",
                "redis+sentinel://h1:***@h2:2/m",
            ),
            (
                "redis+cluster://u:p1@h1:1,u:p2@h2:2",
                "redis+cluster://u:***@h2:2",
            ),
            (
                "redis+sentinel://h1/m?sentinel_username=s&sentinel_password=s3&cr3t",
                "redis+sentinel://h1/m?sentinel_username=s&sentinel_password=***",
            ),
            (
                "redis+sentinel://u:p@h/m?sentinel_password=x@y",
                "redis+sentinel://u:***",
            ),
        ] {
            assert_eq!(RedisUrl::new(url).to_string(), shown, "{url}");
        }
    }

    proptest::proptest! {
        /// Whatever a password holds, in whichever host part or in
        /// `sentinel_password=`, no part of it shows (it is framed by two
        /// markers that must both be hidden).
        #[test]
        fn no_password_of_a_multi_host_url_shows(
            password in "[ -~]{0,12}",
            part in 0usize..3,
            hosts in 1usize..4,
            scheme in proptest::sample::select(vec!["redis+sentinel", "rediss+cluster", "redis"]),
        ) {
            let secret = format!("Sup3r{password}S3cret");
            let mut parts: Vec<String> = (0..hosts).map(|i| format!("h{i}:{}", 7000 + i)).collect();
            let part = part.min(hosts - 1);
            let url = if part == 2 || (part == 1 && hosts == 1) {
                format!("{scheme}://{}/m?sentinel_password={secret}", parts.join(","))
            } else {
                parts[part] = format!("app:{secret}@{}", parts[part]);
                format!("{scheme}://{}/m", parts.join(","))
            };
            let url = RedisUrl::new(&url);
            for shown in [url.to_string(), format!("{url:?}")] {
                proptest::prop_assert!(!shown.contains("Sup3r"), "{}", shown);
                proptest::prop_assert!(!shown.contains("S3cret"), "{}", shown);
            }
        }
    }

    #[test]
    fn a_user_name_or_password_with_a_delimiter_needs_encoding() {
        for (url, needs) in [
            ("redis://app:ab#c@h/0", true),
            ("redis://app:a/b@h/0", true),
            ("redis://a?b:c@h/0", true),
            ("redis://app:a%23b@h/0", false),
            ("redis://app:a@b:c@h/0", false),
            ("redis://h:6379/0", false),
            ("redis+unix:///r.sock?pass=a#b@c", false),
        ] {
            assert_eq!(RedisUrl::new(url).userinfo_needs_encoding(), needs, "{url}");
        }
    }
}
