//! [`NameOfStation`], a validated station name, and [`NameError`], why a name is invalid.

use core::fmt;

/// A validated NameOfStation (IEC 61158-6-10 §4.3.1.4.16; p-net `pf_cmina_is_stationname_valid`).
///
/// Rules: 1..=240 bytes; labels separated by '.', each 1..=63 bytes of `[a-z0-9-]`, not starting
/// or ending with '-'; "--" only as the RFC 5890 A-label prefix "xn--" at the start of a label
/// (the punycode after it is not decoded); the first label is not "port-xyz" or
/// "port-xyz-abcde" (digits); the name is not of the form "a.b.c.d" with a..d = 0..999.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameOfStation(String);

/// Why a NameOfStation is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    EmptyLabel,
    LabelTooLong,
    InvalidChar,
    HyphenAtLabelEdge,
    DoubleHyphen,
    PortName,
    IpAddressLike,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            NameError::Empty => "empty name",
            NameError::TooLong => "longer than 240 characters",
            NameError::EmptyLabel => "empty label",
            NameError::LabelTooLong => "label longer than 63 characters",
            NameError::InvalidChar => "only a-z, 0-9, '-' and '.' are allowed",
            NameError::HyphenAtLabelEdge => "label starts or ends with '-'",
            NameError::DoubleHyphen => "\"--\" is only allowed as the \"xn--\" prefix",
            NameError::PortName => "first label has the form port-xyz or port-xyz-abcde",
            NameError::IpAddressLike => "name has the form n.n.n.n",
        };
        f.write_str(s)
    }
}

impl std::error::Error for NameError {}

fn all_digits(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_digit)
}

impl NameOfStation {
    pub const MAX_LEN: usize = 240;
    pub const MAX_LABEL_LEN: usize = 63;

    /// Validate `name`.
    pub fn new(name: &str) -> core::result::Result<NameOfStation, NameError> {
        Self::validate(name.as_bytes())?;
        Ok(NameOfStation(name.to_owned()))
    }

    /// Validate raw wire bytes.
    pub fn from_bytes(b: &[u8]) -> core::result::Result<NameOfStation, NameError> {
        Self::validate(b)?;
        // Validation admits ASCII only.
        Ok(NameOfStation(String::from_utf8_lossy(b).into_owned()))
    }

    /// Check the rules without building a value.
    pub fn validate(b: &[u8]) -> core::result::Result<(), NameError> {
        if b.is_empty() {
            return Err(NameError::Empty);
        }
        if b.len() > Self::MAX_LEN {
            return Err(NameError::TooLong);
        }
        let mut n_labels = 0usize;
        let mut ip_like = true;
        for (i, label) in b.split(|&c| c == b'.').enumerate() {
            n_labels += 1;
            if label.is_empty() {
                return Err(NameError::EmptyLabel);
            }
            if label.len() > Self::MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
            if !label
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            {
                return Err(NameError::InvalidChar);
            }
            if label.first() == Some(&b'-') || label.last() == Some(&b'-') {
                return Err(NameError::HyphenAtLabelEdge);
            }
            for (j, w) in label.windows(2).enumerate() {
                if w == b"--" && !(j == 2 && label.starts_with(b"xn--")) {
                    return Err(NameError::DoubleHyphen);
                }
            }
            if i == 0 {
                if let Some(rest) = label.strip_prefix(b"port-") {
                    let port3 = rest.len() == 3 && all_digits(rest);
                    let port3_5 = rest.len() == 9
                        && all_digits(&rest[..3])
                        && rest[3] == b'-'
                        && all_digits(&rest[4..]);
                    if port3 || port3_5 {
                        return Err(NameError::PortName);
                    }
                }
            }
            if !(label.len() <= 3 && all_digits(label)) {
                ip_like = false;
            }
        }
        if n_labels == 4 && ip_like {
            return Err(NameError::IpAddressLike);
        }
        Ok(())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Display for NameOfStation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NameOfStation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NameOfStation({:?})", self.0)
    }
}

impl core::str::FromStr for NameOfStation {
    type Err = NameError;
    fn from_str(s: &str) -> core::result::Result<Self, NameError> {
        NameOfStation::new(s)
    }
}

impl TryFrom<&str> for NameOfStation {
    type Error = NameError;
    fn try_from(s: &str) -> core::result::Result<Self, NameError> {
        NameOfStation::new(s)
    }
}

impl AsRef<str> for NameOfStation {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
