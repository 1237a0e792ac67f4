//! The configuration parser and its validation on arbitrary text: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use precsolve::config::RawConfig;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = RawConfig::parse(&text, "fuzz.toml").and_then(RawConfig::validate);
});
