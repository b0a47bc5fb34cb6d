//! The binary content the suite checks in tools, prompts and resources alike.

/// A 1x1 red PNG.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with one silent 16-bit sample (8 kHz, mono).
pub(crate) const WAV_BASE64: &str =
    "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";
