//! A Redis URL that never shows its password: [`RedisUrl`].

use std::fmt;

/// A Redis URL as given (`redis://user:password@host:6379/0`), whose
/// `Debug` and `Display` replace the password with `***`. The text with the
/// password is read only to connect.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    url: String,
    /// Where the password is in `url`, if it has one.
    password: Option<std::ops::Range<usize>>,
}

impl RedisUrl {
    pub(crate) fn new(url: &str) -> Self {
        RedisUrl {
            url: url.to_owned(),
            password: password_range(url),
        }
    }

    /// The URL with its password, to connect.
    pub(crate) fn expose(&self) -> &str {
        &self.url
    }

    /// `text` with every occurrence of the password replaced by `***`: for
    /// messages that came from elsewhere (the client crate, the system).
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.password {
            Some(range) if !range.is_empty() => text.replace(&self.url[range.clone()], "***"),
            _ => text.to_owned(),
        }
    }
}

/// The byte range of the password in `url`: between the `:` after the user
/// name and the last `@` of the authority. Query parameters that carry one
/// (`?password=`) count too.
fn password_range(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    if let Some(at) = url[start..authority_end].rfind('@') {
        let userinfo = &url[start..start + at];
        if let Some(colon) = userinfo.find(':') {
            return Some(start + colon + 1..start + at);
        }
    }
    for key in ["password=", "pass="] {
        if let Some(i) = url.find(key) {
            let from = i + key.len();
            let to = url[from..].find('&').map_or(url.len(), |j| from + j);
            return Some(from..to);
        }
    }
    None
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.password {
            Some(range) => write!(
                f,
                "{}***{}",
                &self.url[..range.start],
                &self.url[range.end..]
            ),
            None => f.write_str(&self.url),
        }
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

    #[test]
    fn a_password_in_the_url_is_never_shown() {
        for (url, shown) in [
            ("redis://:s3cr3t@h:6379/0", "redis://:***@h:6379/0"),
            ("redis://app:s3cr3t@h/1", "redis://app:***@h/1"),
            ("redis://app:p@ss:w@h", "redis://app:***@h"),
            (
                "redis+unix:///r.sock?db=1&pass=s3cr3t",
                "redis+unix:///r.sock?db=1&pass=***",
            ),
            ("redis://h:6379", "redis://h:6379"),
            ("redis://user@h", "redis://user@h"),
        ] {
            let url = RedisUrl::new(url);
            assert_eq!(url.to_string(), shown);
            assert_eq!(format!("{url:?}"), format!("\"{shown}\""));
        }
        let url = RedisUrl::new("redis://app:s3cr3t@h/1");
        assert_eq!(url.scrub("WRONGPASS s3cr3t"), "WRONGPASS ***");
    }
}
