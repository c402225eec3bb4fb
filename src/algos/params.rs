//! Algorithm parameters as written in a scenario, taken one by one by the builder.

use super::AlgoInfo;
use crate::units;
use crate::units::ParamValue;

/// A parameter that is unknown, malformed or out of range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// The parameter at fault, if one is.
    pub key: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ParamError {
    /// An error about `key` (or the algorithm as a whole).
    pub fn new(key: Option<&str>, message: String) -> Self {
        ParamError { key: key.map(str::to_string), message }
    }
}

/// The parameters of one `algorithms:` entry; a builder takes what it knows and
/// [`Params::finish`] rejects the rest.
#[derive(Clone, Debug, Default)]
pub struct Params {
    items: Vec<(String, ParamValue)>,
}

impl Params {
    /// Parameters in the order written.
    pub fn new(items: Vec<(String, ParamValue)>) -> Self {
        Params { items }
    }

    fn take(&mut self, key: &str) -> Option<ParamValue> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        Some(self.items.remove(i).1)
    }

    /// Whether `key` was given (and not taken yet).
    pub fn has(&self, key: &str) -> bool {
        self.items.iter().any(|(k, _)| k == key)
    }

    /// The value given for `key`, as written, taken (so [`Params::finish`] does not
    /// refuse it); `None` if not given.
    pub fn take_value(&mut self, key: &str) -> Option<ParamValue> {
        self.take(key)
    }

    /// A positive whole number (`segments: 4`), written as a YAML integer or, like
    /// `ranks: "4"`, a string of digits.
    pub fn count(&mut self, key: &str, default: usize) -> Result<usize, ParamError> {
        self.count_from(key, default, 1)
    }

    /// A whole number of at least `min` (`base: 2`), as [`Params::count`] reads it: the
    /// refusal states the range from `min`, not from 1 (where 1 would then be refused).
    pub fn count_from(&mut self, key: &str, default: usize, min: usize) -> Result<usize, ParamError> {
        let v = match self.take(key) {
            None => return Ok(default),
            Some(v) => v,
        };
        let n = match &v {
            ParamValue::Int(n) => Some(*n),
            ParamValue::Str(s) if !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit()) => {
                s.trim().parse::<u64>().ok()
            }
            _ => None,
        };
        // Every algorithm's `channels` is NCCL's, 1 to MAXCHANNELS: the message states that range.
        let channels = key == "channels";
        let max = if channels { 64 } else { usize::MAX };
        match n.map(usize::try_from) {
            Some(Ok(n)) if (min.max(1)..=max).contains(&n) => Ok(n),
            // A number with a fraction is shown as written (`8.0`, `1e1` as 10.0): "1 to 64,
            // not 8" would name a value in the range.
            _ if channels => Err(ParamError::new(
                Some(key),
                match &v {
                    ParamValue::Float(x) => format!("'channels' must be a whole number from 1 to {max}, not {x:?}"),
                    _ => format!("'channels' must be 1 to {max}, not {v}"),
                },
            )),
            // As for channels: `segments: !!float 3` is the float 3.0, not the '3' in range.
            _ => Err(ParamError::new(
                Some(key),
                match &v {
                    ParamValue::Float(x) => format!("'{key}' must be a whole number from {min} to {max}, not {x:?}"),
                    _ => format!("'{key}' must be a whole number from {min} to {max}, not '{v}'"),
                },
            )),
        }
    }

    /// A size in bytes (`segment: 256KiB`), at least 1 byte.
    pub fn size(&mut self, key: &str) -> Result<Option<u64>, ParamError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => {
                let text = v.to_string();
                match units::parse_size(&text) {
                    Ok(b) if b >= 1 => Ok(Some(b)),
                    Ok(_) => Err(ParamError::new(Some(key), format!("'{key}' must be at least 1 byte"))),
                    Err(e) => Err(ParamError::new(Some(key), format!("'{key}': {e}"))),
                }
            }
        }
    }

    /// One of `allowed` (the first is the default).
    pub fn choice(&mut self, key: &str, allowed: &[&'static str]) -> Result<&'static str, ParamError> {
        match self.take(key) {
            None => Ok(allowed[0]),
            Some(ParamValue::Str(s)) if allowed.contains(&s.as_str()) => {
                Ok(allowed.iter().find(|a| **a == s).copied().unwrap_or(allowed[0]))
            }
            Some(v) => {
                Err(ParamError::new(Some(key), format!("'{key}' must be one of {}, not '{v}'", allowed.join(", "))))
            }
        }
    }

    /// Reject whatever the builder did not take.
    pub fn finish(self, info: &AlgoInfo) -> Result<(), ParamError> {
        let Some((key, _)) = self.items.first() else { return Ok(()) };
        let allowed = if info.params.is_empty() {
            "it takes none".to_string()
        } else {
            let names: Vec<_> = info.params.iter().map(|p| p.split(['=', ':']).next().unwrap_or(p)).collect();
            format!("allowed: {}", names.join(", "))
        };
        Err(ParamError::new(Some(key), format!("unknown parameter '{key}' for algorithm '{}'; {allowed}", info.id)))
    }
}
